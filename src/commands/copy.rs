//! `settle copy SRC DST`: every row of one ledger into a new or empty one,
//! SQLite or PostgreSQL either way, whole or not at all on the destination
//! (one transaction; into a PostgreSQL ledger the copy created, tables
//! staged side by side and moved in by one) (a spinner counts the rows on
//! a terminal);
//! prints how many rows of each table went, then walks the destination's
//! audit trail so a chain the copy changed is caught here, not later.

use std::path::Path;

use crate::error::{Error, Result};
use crate::store::{ChainVerdict, Ledger};

pub fn run(source: &Path, destination: &Path) -> Result<()> {
    let from = super::ledger_arg::open_for_reading(source)?;
    let (mut to, opened) = Ledger::open_or_create(destination)?;
    if let Some(line) = opened.upgraded {
        eprintln!("{line}");
    }
    let steps = super::progress::Steps::counting("copying");
    let report = from.copy_into(&mut to, &mut |table, rows| steps.set(rows, table))?;
    steps.clear();
    for (table, rows) in &report.tables {
        println!("{table:<15} {rows:>10}");
    }
    // The ledgers as they name themselves: an address given on the
    // command line may carry a password.
    println!(
        "copied {} to {}",
        crate::text::sanitize(&from.path().display().to_string()),
        crate::text::sanitize(&to.path().display().to_string())
    );
    let copied = to.verify_chain()?;
    if copied != from.verify_chain()? {
        // The same rows give the same links: a difference means a value
        // changed on the way.
        return Err(chain_error(
            to.path(),
            copied,
            "the copy's audit trail differs from the source's",
        ));
    }
    match copied {
        ChainVerdict::Intact { decisions, .. } => {
            println!("audit trail intact on the copy: {decisions} decisions");
        }
        ChainVerdict::Broken { at, problem } => eprintln!(
            "settle: the source's audit trail was already broken at decision {at} ({problem}); copied as it is"
        ),
    }
    // A new SQLite file's read model is built now, in bulk, so the copy
    // opens ready: caught up row by row, it would hold the first `settle
    // list` for seconds, growing with the copy.
    drop(to);
    super::progress::open_writable("building the read model", destination)?;
    Ok(())
}

fn chain_error(path: &Path, verdict: ChainVerdict, why: &str) -> Error {
    match verdict {
        ChainVerdict::Broken { at, problem } => Error::ChainBroken {
            path: path.to_path_buf(),
            at,
            problem: format!("{why}: {problem}"),
        },
        ChainVerdict::Intact { .. } => Error::ledger(
            path,
            format!("{why} (the source's is broken, the copy's is not)"),
            "verify the source with `settle audit --verify`",
        ),
    }
}
