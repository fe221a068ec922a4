//! Which arguments of the command line are ledgers, so `@NAME` (and a
//! group's name) is resolved in one place for every command.

use std::path::PathBuf;

use super::args::{Cli, Command, DrillCommand};
use super::ledger_set::LedgerSet;

/// A LEDGER argument of the command line, and whether the command writes
/// to it (a ledger named read-only in config.toml refuses those).
pub struct LedgerArg<'a> {
    pub value: &'a mut PathBuf,
    pub writes: bool,
}

impl Cli {
    /// Every LEDGER the command line names, so `@NAME` is resolved in one
    /// place for every command.
    pub fn ledger_args(&mut self) -> Vec<LedgerArg<'_>> {
        let reads = |value| LedgerArg {
            value,
            writes: false,
        };
        let writes = |value| LedgerArg {
            value,
            writes: true,
        };
        match &mut self.command {
            None => Vec::new(),
            Some(Command::Audit(a)) => vec![reads(&mut a.ledger)],
            Some(Command::Init { ledger } | Command::Adopt { ledger }) => vec![writes(ledger)],
            Some(Command::Worker(a)) => vec![writes(&mut a.ledger)],
            Some(Command::Copy {
                source,
                destination,
            }) => vec![reads(source), writes(destination)],
            Some(Command::Drill {
                command: DrillCommand::Import { ledger, .. },
            }) => vec![writes(ledger)],
            Some(Command::Drill {
                command: DrillCommand::Run(args),
            }) => args.ledger.iter_mut().map(writes).collect(),
            Some(Command::Demo { ledger, .. }) => ledger.iter_mut().map(writes).collect(),
            Some(
                Command::List(_)
                | Command::Count(_)
                | Command::Show(_)
                | Command::Decide(_)
                | Command::Probe(_)
                | Command::Drill { .. }
                | Command::Receiver { .. }
                | Command::Completions { .. }
                | Command::Ledgers
                | Command::Man,
            ) => Vec::new(),
        }
    }

    /// The LEDGER arguments of a command that takes several ledgers (or
    /// a group), the set they resolve into, and whether it writes.
    pub fn ledger_set_args(&mut self) -> Option<(&[PathBuf], &mut LedgerSet, bool)> {
        match &mut self.command {
            // A ledger named read-only opens read-only (as in a group).
            None => Some((&self.console.ledgers, &mut self.console.set, false)),
            Some(Command::List(a)) => Some((&a.ledgers, &mut a.set, false)),
            Some(Command::Count(a)) => Some((&a.ledgers, &mut a.set, false)),
            Some(Command::Show(a)) => Some((&a.ledgers, &mut a.set, false)),
            Some(Command::Decide(a)) => Some((std::slice::from_ref(&a.ledger), &mut a.set, true)),
            Some(Command::Probe(a)) => Some((std::slice::from_ref(&a.ledger), &mut a.set, true)),
            _ => None,
        }
    }

    /// The `--receivers` of the command that reads receivers.
    pub fn receivers_mut(&mut self) -> &mut Option<PathBuf> {
        match &mut self.command {
            Some(Command::Worker(args)) => &mut args.receivers.receivers,
            Some(Command::Probe(args)) => &mut args.receivers.receivers,
            Some(Command::Show(args)) => &mut args.receivers.receivers,
            Some(Command::Decide(args)) => &mut args.receivers.receivers,
            _ => &mut self.console.receivers.receivers,
        }
    }
}
