//! `settle demo`: builds a fresh ledger from the bundled sample data the way
//! a service would (plain SQL, schema version 0), lets the console adopt it,
//! records one earlier operator decision so every state is present, and opens
//! the console on it. The data is compiled in, so the demo works from any
//! folder of a fresh clone.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::cli::ListFormat;
use crate::config::Config;
use crate::domain::{DecisionDraft, DecisionKind, OperationId};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;

/// The sample ledger, as a service's SQL script.
pub const SAMPLE_LEDGER_SQL: &str = include_str!("../../sample-data/ledger.sql");
/// Results of the reference retry drill, copied in as data.
pub const SAMPLE_DRILL_JSON: &str = include_str!("../../sample-data/drill-results.json");

/// Operator name on the decision the sample history already holds.
const SAMPLE_OPERATOR: &str = "sample-oncall";

/// The sample ledger, open, with where it and the drill file are.
pub struct Demo {
    pub ledger: Ledger,
    pub ledger_path: PathBuf,
    pub drill_path: PathBuf,
}

/// Builds the sample ledger and drill file in `dir`.
pub fn build(dir: &Path, now: DateTime<Utc>) -> Result<Demo> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        doing: "creating the demo folder".to_string(),
        source,
    })?;
    let ledger_path = dir.join("ledger.db");
    let drill_path = dir.join("drill-results.json");
    if ledger_path.exists() {
        return Err(Error::ledger(
            &ledger_path,
            "already exists",
            "give `settle demo` a new folder, or open this one with `settle PATH`",
        ));
    }
    crate::store::create_service_ledger(&ledger_path, SAMPLE_LEDGER_SQL)?;
    std::fs::write(&drill_path, SAMPLE_DRILL_JSON).map_err(|source| Error::Io {
        path: drill_path.clone(),
        doing: "writing the sample drill results".to_string(),
        source,
    })?;
    let mut ledger = super::open(&ledger_path, false)?;
    // An earlier shift asked for a same-key retry of refund rfd-11977: this
    // puts a retry_pending operation with a queued request in the sample.
    let retried = OperationId(15);
    let version = ledger.detail(retried)?.operation.version;
    ledger.record_decision(
        &DecisionDraft {
            op_id: retried,
            kind: DecisionKind::RetrySameKey,
            result_id: None,
            evidence: None,
            note: Some("payments confirmed keys are kept forever; retrying".to_string()),
            override_committed: false,
            operator: SAMPLE_OPERATOR.to_string(),
            expected_version: version,
            undoes: None,
        },
        now,
    )?;
    Ok(Demo {
        ledger,
        ledger_path,
        drill_path,
    })
}

/// `settle demo`: builds the sample in `dir` (a new temp folder by default)
/// and opens the console on it, or prints the queue and what to try when
/// there is no terminal. `config` comes with the demo's operator policy
/// ([`Config::for_demo`]).
pub fn run(
    dir: Option<PathBuf>,
    ledger: Option<PathBuf>,
    no_console: bool,
    config: Config,
    now: DateTime<Utc>,
) -> Result<()> {
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "settle-demo-{}-{}",
            now.format("%Y%m%d-%H%M%S"),
            std::process::id()
        ))
    });
    let mut demo = build(&dir, now)?;
    eprintln!("settle: sample ledger in {}", dir.display());
    // Another ledger (PostgreSQL): the sample built as above, then copied
    // across, so both backends start from the same rows and history.
    let named = ledger.is_some();
    if let Some(address) = ledger {
        let (mut there, _) = Ledger::open_or_create(&address)?;
        demo.ledger.copy_into(&mut there)?;
        eprintln!("settle: sample copied into {}", there.path().display());
        demo.ledger = there;
        demo.ledger_path = address;
    }
    if !no_console && std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        // The console opens the ledger itself, with its own connections.
        drop(demo.ledger);
        return crate::tui::run(&demo.ledger_path, &[demo.drill_path], None, &config);
    }
    println!("The triage queue of the sample ledger:\n");
    let colour = super::output::colour(&config);
    super::list::write_list(
        &demo.ledger,
        &Query::queue(),
        ListFormat::Table,
        100,
        colour,
        now,
    )?;
    // An address may hold a password: the commands to try name it LEDGER.
    let l = if named {
        "LEDGER".to_string()
    } else {
        demo.ledger_path.display().to_string()
    };
    let d = demo.drill_path.display();
    println!(
        "\nTry:\n  settle {l}                        the console\n  settle show {l} 1                 a committed effect with no reply\n  settle decide {l} 1 --applied --result-id report-8812 --operator you\n  settle decide {l} 2 --retry-same-key --operator you\n  settle decide {l} 3 --retry-same-key --operator you   (refused: key expired)\n  settle audit {l}\n  settle drill show {d}"
    );
    Ok(())
}
