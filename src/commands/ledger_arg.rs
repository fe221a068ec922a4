//! Opening the ledger a command names, for reading or for writing, and
//! saying on stderr what the open did or why it cannot write; and finding
//! which of several ledgers an operation's `NAME:ID` means.

use std::path::Path;

use crate::cli::ledger_set::{LedgerSet, Member};
use crate::domain::OperationId;
use crate::error::{Error, Result};
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

/// An operation found in one ledger of a set, that ledger open.
pub struct Located<'s> {
    pub ledger: Ledger,
    pub id: OperationId,
    pub member: &'s Member,
}

/// The operation `spec` names among `set`'s ledgers, its ledger opened by
/// `open`. One ledger resolves `spec` as it always did; of several,
/// `NAME:ID` (`payments:42`, `payments:acme/charge/k-1`) says whose, and
/// a bare id is refused with the names of the ledgers that hold it.
pub fn locate<'s>(
    set: &'s LedgerSet,
    spec: &str,
    open: impl Fn(&Member) -> Result<Ledger>,
) -> Result<Located<'s>> {
    let in_member = |member: &'s Member, spec: &str| -> Result<Located<'s>> {
        let ledger = open(member)?;
        let id = ledger.resolve(spec)?;
        Ok(Located { ledger, id, member })
    };
    match (&set.members[..], set.split(spec)) {
        ([one], _) => in_member(one, spec),
        (_, Some((member, id))) => {
            in_member(member, id).map_err(|e| Error::in_ledger(&member.name, e))
        }
        (members, None) => {
            let holding: Vec<String> = members
                .iter()
                .filter(|m| open_for_reading(&m.address).is_ok_and(|l| l.resolve(spec).is_ok()))
                .map(|m| format!("{}:{}", m.name, spec.trim()))
                .collect();
            let spec = crate::text::sanitize(spec.trim());
            let found = if holding.is_empty() {
                "none of them holds it".to_string()
            } else {
                format!("it exists as {}", holding.join(", "))
            };
            Err(Error::Usage(format!(
                "{spec:?} is ambiguous: {} ledgers are read ({}); write NAME:ID, e.g. {}:{spec}; {found}",
                members.len(),
                set.names(),
                members.first().map_or("", |m| m.name.as_str()),
            )))
        }
    }
}

/// The one ledger a command that writes several operations (`probe`)
/// records in, and the ids to resolve there: one ledger takes the specs as
/// they are; of several, every spec is `NAME:ID` of the same NAME.
pub fn one_ledger_for<'s>(
    set: &'s LedgerSet,
    specs: &'s [String],
) -> Result<(&'s Member, Vec<&'s str>)> {
    if let [one] = &set.members[..] {
        return Ok((one, specs.iter().map(String::as_str).collect()));
    }
    let split: Option<Vec<(&Member, &str)>> = specs.iter().map(|s| set.split(s)).collect();
    if let Some(split) = split
        && let Some((first, _)) = split.first()
        && split.iter().all(|(m, _)| m.name == first.name)
    {
        return Ok((first, split.iter().map(|(_, id)| *id).collect()));
    }
    Err(Error::Usage(format!(
        "this command writes to one ledger at a time and {} are read ({}): write each OP as NAME:ID, all of one ledger",
        set.members.len(),
        set.names()
    )))
}
