//! `settle drill show` and `settle drill import`: retry-drill results read
//! and analysed by [`crate::drill`], printed or brought into a ledger;
//! `settle drill run` is [`super::drill_run`].

use std::path::{Path, PathBuf};

use super::output::{emit, emit_json};
use crate::cli::{DrillCommand, ShowFormat};
use crate::error::Result;
use crate::text::sanitize;

pub fn run(command: DrillCommand, config: &crate::cli::config::Config) -> Result<()> {
    match command {
        DrillCommand::Show { files, format } => show(&files, format),
        DrillCommand::Import { file, ledger } => import(&file, &ledger),
        DrillCommand::Run(args) => super::drill_run::run(&args, config),
    }
}

fn show(files: &[PathBuf], format: ShowFormat) -> Result<()> {
    let read = files
        .iter()
        .map(|path| crate::drill::load(path))
        .collect::<Result<Vec<_>>>()?;
    match format {
        ShowFormat::Text => emit(|out| out.write_all(crate::drill::render_text(&read).as_bytes())),
        ShowFormat::Json => emit_json(&crate::drill::render_json(&read)),
    }
}

fn import(file: &Path, ledger: &Path) -> Result<()> {
    let drill = crate::drill::read_file(file)?;
    for w in &drill.warnings {
        eprintln!("settle: {}: {}", file.display(), sanitize(w));
    }
    let source = crate::drill::import::source_name(file);
    let plan = crate::drill::import_plan(&drill, &source);
    let mut ledger = super::ledger_arg::open(ledger, false)?;
    let report = ledger.import(&plan, &[])?;
    let mut states: Vec<(String, usize)> = Vec::new();
    for op in &plan {
        match states.iter_mut().find(|(s, _)| s == op.state.as_str()) {
            Some((_, n)) => *n += 1,
            None => states.push((op.state.to_string(), 1)),
        }
    }
    let states: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
    emit(|out| {
        writeln!(
            out,
            "{}: {} case(s) ({}): {} imported, {} already in the ledger (left as they are)",
            file.display(),
            plan.len(),
            states.join(", "),
            report.inserted,
            report.already_present
        )
    })
}
