//! `settle LEDGER [LEDGER…]`: opens the console on a ledger, or on several
//! as one incident (a group of the store's: one queue, each row naming
//! its ledger), with the resolved [`Config`]; the console itself lives in
//! [`crate::console::shell`].

use std::path::PathBuf;

use crate::cli::ConsoleArgs;
use crate::cli::config::Config;
use crate::cli::ledger_set::LedgerSet;
use crate::error::{Error, Result};
use crate::store::group::{self, MemberSpec};

pub fn run(args: ConsoleArgs, config: &Config) -> Result<()> {
    let Some(ledger) = console_ledger(&args.ledgers, &args.set) else {
        return Err(Error::Usage(
            "name a ledger to open (settle LEDGER), or try `settle demo`".to_string(),
        ));
    };
    if let Some(dir) = args.drill_dir.as_deref().filter(|d| !d.is_dir()) {
        return Err(Error::Usage(format!(
            "--drill-dir {}: not a folder; name the folder the drill runs are written to",
            dir.display()
        )));
    }
    crate::console::run(&ledger, &args.drills, args.drill_dir.as_deref(), config)
}

/// The one ledger to open, or the group the store opens for several:
/// named after the one `@GROUP` given, else after its members.
fn console_ledger(raw: &[PathBuf], set: &LedgerSet) -> Option<PathBuf> {
    match &set.members[..] {
        [] => None,
        [one] => Some(one.address.clone()),
        members => {
            let name = match raw {
                [one] => one
                    .to_str()
                    .and_then(|v| v.strip_prefix('@'))
                    .map(str::to_string),
                _ => None,
            }
            .unwrap_or_else(|| set.names().replace(", ", "+"));
            let specs = members
                .iter()
                .map(|m| MemberSpec {
                    name: m.name.clone(),
                    address: m.address.clone(),
                    writes_refused: m.writes_refused.clone(),
                })
                .collect();
            Some(group::declare(&name, specs))
        }
    }
}
