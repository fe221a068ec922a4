//! What the Drills view is made of, before any cursor: a drill file as
//! read ([`LoadedDrill`]), the key an import gives each case, one row of
//! the view, a case as shown, and the orders the rows can take. Plain
//! data the pane, the comparison and the messages share.

use crate::drill::{self, Analysis, CaseAnalysis, DrillCase, Finding, Verdict};

/// A drill file given with `--drill`, and what reading it produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedDrill {
    pub path: String,
    /// The file and its analysis, or why it could not be read.
    pub analysis: Result<Box<(drill::DrillFile, Analysis)>, String>,
    /// The key `settle drill import` gives each case, in file order:
    /// planned once here, not on every frame that links a case and its
    /// operation.
    keys: Vec<CaseKey>,
}

impl LoadedDrill {
    /// The file's name without its folders: the run column.
    pub fn run_name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }

    /// The op type whose real receiver `settle drill run` drilled to write
    /// this file (its `against_receiver`), `None` for any other producer.
    /// Untrusted text: the caller sanitises it.
    pub fn against_receiver(&self) -> Option<String> {
        let file = &self.analysis.as_ref().ok()?.0;
        let op_type = file.extra.get("against_receiver")?.get("op_type")?;
        Some(
            op_type
                .as_str()
                .map_or_else(|| op_type.to_string(), str::to_string),
        )
    }

    /// A drill file as read: its analysis, or why it could not be read.
    pub fn new(path: String, analysis: Result<Box<(drill::DrillFile, Analysis)>, String>) -> Self {
        let keys = analysis
            .as_ref()
            .map(|pair| import_keys(&path, &pair.0))
            .unwrap_or_default();
        LoadedDrill {
            path,
            analysis,
            keys,
        }
    }

    /// The natural key `settle drill import` gives each case of this
    /// file, in file order.
    pub fn import_keys(&self) -> &[CaseKey] {
        &self.keys
    }
}

/// The import plan is deterministic, so recomputing it finds the
/// operations an import of `file` wrote.
fn import_keys(path: &str, file: &drill::DrillFile) -> Vec<CaseKey> {
    let source = drill::import::source_name(std::path::Path::new(path));
    drill::import_plan(file, &source)
        .into_iter()
        .enumerate()
        .map(|(case, op)| CaseKey {
            path: path.to_string(),
            case,
            account: op.account,
            op_type: op.op_type,
            key: op.idem_key,
        })
        .collect()
}

/// A drill case and the ledger operation an import of it would be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseKey {
    pub path: String,
    pub case: usize,
    pub account: String,
    pub op_type: String,
    pub key: String,
}

/// One row of the Drills view: a case of a file, or a file that could not
/// be read (`case` is `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrillRow {
    pub file: usize,
    pub case: Option<usize>,
}

/// A case as the views show it: what the file says and what the analysis
/// makes of it, with the findings about it.
pub struct CaseView<'a> {
    pub loaded: &'a LoadedDrill,
    pub case: &'a DrillCase,
    pub analysis: &'a CaseAnalysis,
    pub findings: Vec<&'a Finding>,
    /// What is said about the whole file: findings and reading warnings.
    pub file_notes: Vec<String>,
}

/// The order of the Drills rows; `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DrillSort {
    /// As the files list them.
    #[default]
    File,
    /// Worst verdict first: duplicates, then unresolved, conflicts, safe.
    Verdict,
    Case,
    Strategy,
}

impl DrillSort {
    pub fn label(self) -> &'static str {
        match self {
            DrillSort::File => "file order",
            DrillSort::Verdict => "verdict",
            DrillSort::Case => "case",
            DrillSort::Strategy => "strategy",
        }
    }

    pub(crate) fn next(self) -> DrillSort {
        match self {
            DrillSort::File => DrillSort::Verdict,
            DrillSort::Verdict => DrillSort::Case,
            DrillSort::Case => DrillSort::Strategy,
            DrillSort::Strategy => DrillSort::File,
        }
    }
}

/// How much a verdict needs the reader's eye; lower sorts first.
pub(crate) fn verdict_rank(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::DuplicateEffect => 0,
        Verdict::Unresolved => 1,
        Verdict::Conflict => 2,
        Verdict::Safe => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(text: &str) -> LoadedDrill {
        let path = std::path::Path::new("out/drill-1/drill-results.json");
        let file = drill::parse(path, text).unwrap();
        let analysis = drill::analyse(&file);
        LoadedDrill::new(path.display().to_string(), Ok(Box::new((file, analysis))))
    }

    #[test]
    fn a_run_against_a_receiver_names_its_op_type_and_others_do_not() {
        let drilled = loaded(r#"{"against_receiver": {"op_type": "place_order"}, "cases": []}"#);
        assert_eq!(drilled.against_receiver().as_deref(), Some("place_order"));
        let other = loaded(r#"{"python": "3.11", "cases": []}"#);
        assert_eq!(other.against_receiver(), None);
    }
}
