//! The scriptable commands, one module each: every command opens the ledger
//! through `store`, does one thing, and prints it through [`output`] in the
//! format asked for. Settings come resolved from [`crate::config`]. Text
//! output is sanitised and carries no colour unless stdout is a terminal and
//! `NO_COLOR` is unset. Nothing here speaks SQL.

mod adopt;
mod audit;
mod completions;
mod console;
mod copy;
mod decide;
mod decide_bulk;
pub mod demo;
mod drill;
mod init;
mod list;
mod output;
mod probe;
mod receiver;
mod show;
mod worker;

use std::path::Path;

use chrono::Utc;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::error::Result;
use crate::store::{Access, Ledger};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let now = Utc::now();
    let config = Config::from_process(cli.flags());
    match cli.command {
        Some(Command::Init { ledger }) => init::run(&ledger),
        Some(Command::Adopt { ledger }) => adopt::run(&ledger),
        Some(Command::List(args)) => list::run(&args, &config, now),
        Some(Command::Show(args)) => show::run(&args, now),
        Some(Command::Decide(args)) => decide::run(&args, &config, now),
        Some(Command::Probe(args)) => probe::run(&args, &config, now),
        Some(Command::Audit(args)) => audit::run(&args),
        Some(Command::Copy {
            source,
            destination,
        }) => copy::run(&source, &destination),
        Some(Command::Drill { command }) => drill::run(command),
        Some(Command::Demo {
            dir,
            ledger,
            no_console,
        }) => demo::run(dir, ledger, no_console, config.for_demo(), now),
        Some(Command::Worker(args)) => worker::run(&args, &config),
        Some(Command::Receiver { command }) => receiver::run(command, now),
        Some(Command::Completions { shell }) => completions::run(shell),
        None => console::run(cli.console, &config),
    }
}

/// Opens a ledger for a command that only reads (`list`, `show`, `audit`):
/// always read-only, so reading never writes, not even an adoption (a
/// service's ledger changes only when someone asks). An unadopted ledger is
/// read as it is, and stderr says how to adopt it.
pub fn open_for_reading(path: &Path) -> Result<Ledger> {
    let (ledger, report) = Ledger::open(path, Access::ReadOnly)?;
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
    if ledger.is_read_only() {
        return Err(ledger.why_not_writable());
    }
    Ok(ledger)
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
    if let Some(why) = report.read_only_reason {
        eprintln!(
            "settle: {}: opened read-only: {why}",
            ledger.path().display()
        );
    }
    Ok(ledger)
}
