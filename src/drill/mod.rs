//! `retry-drill/1` results: a tolerant [`read`]er, an honest [`analysis`]
//! (effects counted, expectations recomputed, one verdict per case), the
//! [`report`] printers behind `settle drill show`, and the [`import`] plan
//! `settle drill import` hands to the store. Pure: no SQL, no terminal, no
//! clock; reading a file is the only I/O, in [`read::read_file`]. The one
//! exception is [`run`] (`settle drill run`), which drills a real receiver
//! with child processes and writes what it proved in the same format.

pub(crate) mod analysis;
mod canonical;
pub(crate) mod drilling;
pub(crate) mod import;
pub(crate) mod read;
pub(crate) mod report;
pub(crate) mod run;

pub use analysis::{
    Analysis, AttemptAnalysis, AttemptClass, CaseAnalysis, FieldCheck, Finding, Severity, Verdict,
    analyse,
};
pub use canonical::{canonical_json, fingerprint};
pub use import::import_plan;
pub use read::{
    DrillAttempt, DrillCase, DrillEvent, DrillFile, DrillOperation, Effect, FORMAT, FinalState,
    parse, read_file,
};
pub use report::{render_json, render_text};

/// Reads `path` and analyses it: what `settle drill show` and the console's
/// Drills view both start from. The file's warnings travel inside it and
/// are printed by the report.
pub fn load(path: &std::path::Path) -> crate::Result<(DrillFile, Analysis)> {
    let file = read_file(path)?;
    let analysis = analyse(&file);
    Ok((file, analysis))
}
