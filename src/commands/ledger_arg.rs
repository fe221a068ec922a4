//! Opening the ledger a command names, for reading or for writing, and
//! saying on stderr what the open did or why it cannot write.

use std::path::Path;

use crate::error::Result;
use crate::store::{Access, Ledger};

/// Opens a ledger for a command that only reads (`list`, `show`, `audit`):
/// always read-only, so reading never writes, not even an adoption (a
/// service's ledger changes only when someone asks). An unadopted ledger is
/// read as it is, and stderr says how to adopt it.
pub fn open_for_reading(path: &Path) -> Result<Ledger> {
    let (ledger, report) = Ledger::open(path, Access::ReadOnly)?;
    aside(&ledger, report.model_aside);
    if let Some(why) = report.not_adopted {
        // The ledger's own name: a PostgreSQL address may hold a password.
        let shown = ledger.path().display();
        let adopt = if ledger.file().is_some() {
            path.display().to_string()
        } else {
            "LEDGER".to_string()
        };
        eprintln!("settle: {shown}: {why}; `settle adopt {adopt}` brings it up to date");
    }
    Ok(ledger)
}

/// Opens a ledger to record a decision. A file that cannot be written is
/// refused here, saying why and what to fix, rather than opened read-only
/// and refused later with advice about a `--read-only` nobody gave. Writes
/// wait up to `wait` for another process's write lock.
pub fn open_for_writing(path: &Path, wait: std::time::Duration) -> Result<Ledger> {
    let (ledger, report) = Ledger::open_waiting(path, Access::ReadWrite, wait, &mut |_| {})?;
    if let Some(line) = report.upgraded {
        eprintln!("{line}");
    }
    aside(&ledger, report.model_aside);
    if ledger.is_read_only() {
        return Err(ledger.why_not_writable());
    }
    Ok(ledger)
}

/// Gives `ledger` the contracts the receivers file at `receivers` declares
/// (none given: nothing changes), so the command judges and shows what
/// the console would.
pub fn declare(ledger: &mut Ledger, receivers: Option<&Path>) -> Result<()> {
    ledger.declare(crate::receivers::Receivers::declarations_in(receivers)?);
    Ok(())
}

/// Opens a ledger for a command, saying on stderr what adoption did.
pub fn open(path: &Path, read_only: bool) -> Result<Ledger> {
    let access = if read_only {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let (ledger, report) = Ledger::open(path, access)?;
    for line in [report.upgraded, report.not_adopted].into_iter().flatten() {
        eprintln!("{line}");
    }
    aside(&ledger, report.model_aside);
    if let Some(why) = report.read_only_reason {
        eprintln!(
            "settle: {}: opened read-only: {why}",
            ledger.path().display()
        );
    }
    Ok(ledger)
}

/// Says on stderr why reads go without settle's read model, if they do.
fn aside(ledger: &Ledger, why: Option<String>) {
    if let Some(why) = why {
        eprintln!("settle: {}: {why}", ledger.path().display());
    }
}
