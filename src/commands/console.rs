//! `settle LEDGER`: opens the console on a ledger with the resolved
//! [`Config`]; the console itself lives in [`crate::console::shell`].

use crate::cli::ConsoleArgs;
use crate::cli::config::Config;
use crate::error::{Error, Result};

pub fn run(args: ConsoleArgs, config: &Config) -> Result<()> {
    let Some(ledger) = args.ledger else {
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
