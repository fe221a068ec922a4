//! `@NAME` on the command line: each LEDGER that names a ledger of
//! config.toml is replaced by its address, and the ledger's receivers file,
//! drill folder and read-only wish stand in for the flags not given; and
//! `settle ledgers`, which lists the names.

use std::path::PathBuf;

use crate::cli::Cli;
use crate::cli::config::Environment;
use crate::cli::named::Ledgers;
use crate::error::{Error, Result};
use crate::store::postgres::with_reads;

/// The config file: `$XDG_CONFIG_HOME/settle/config.toml`, else under
/// `~/.config`.
fn config_file() -> Result<PathBuf> {
    Environment::of_process()
        .config_home
        .map(|home| Ledgers::file_in(&home))
        .ok_or_else(|| {
            Error::Usage(
                "@NAME needs the config file, and neither XDG_CONFIG_HOME nor HOME is set"
                    .to_string(),
            )
        })
}

/// Replaces every `@NAME` LEDGER of `cli` with its address (the file is
/// read only when one is named). The last named ledger's receivers and
/// drill folder become the defaults of `--receivers` and `--drill-dir`.
/// `--reads` (else a named ledger's `reads`) goes into each PostgreSQL
/// address, where the store reads it.
pub fn resolve(cli: &mut Cli) -> Result<()> {
    let mut ledgers: Option<Ledgers> = None;
    let mut defaults = None;
    let flag = cli.reads;
    for arg in cli.ledger_args() {
        let Some(name) = arg.value.to_str().and_then(|v| v.strip_prefix('@')) else {
            if let Some(reads) = flag {
                *arg.value = with_reads(arg.value, reads);
            }
            continue;
        };
        let loaded = match ledgers.take() {
            Some(l) => l,
            None => Ledgers::load(&config_file()?)?,
        };
        let named = loaded.get(name)?.clone();
        ledgers = Some(loaded);
        if named.read_only && arg.writes {
            return Err(Error::Usage(format!(
                "@{name} is read-only in {} (read_only = true); this command writes to it",
                ledgers
                    .as_ref()
                    .map_or(String::new(), |l| l.path.display().to_string())
            )));
        }
        *arg.value = match flag.or(named.reads) {
            Some(reads) => with_reads(&named.address, reads),
            None => named.address.clone(),
        };
        defaults = Some(named);
    }
    if let Some(named) = defaults {
        let receivers = cli.receivers_mut();
        if receivers.is_none() {
            *receivers = named.receivers;
        }
        if cli.command.is_none() {
            if cli.console.drill_dir.is_none() {
                cli.console.drill_dir = named.drill_dir;
            }
            cli.console.read_only |= named.read_only;
        }
    }
    Ok(())
}

/// `settle ledgers`: one line per name, `@NAME  ADDRESS`, the address as a
/// person may see it; stderr says where to write them when there are none.
pub fn list() -> Result<()> {
    let ledgers = Ledgers::load(&config_file()?)?;
    if ledgers.named.is_empty() {
        eprintln!(
            "settle: no named ledgers: add [ledgers.NAME] tables with address = \"PATH or postgres://…\" to {}",
            ledgers.path.display()
        );
    }
    let width = ledgers
        .named
        .iter()
        .map(|l| l.name.len())
        .max()
        .unwrap_or(0);
    for ledger in &ledgers.named {
        let reads = if ledger.read_only {
            "  (read-only)"
        } else {
            ""
        };
        println!(
            "@{:<width$}  {}{reads}",
            crate::text::sanitize(&ledger.name),
            crate::text::sanitize(&ledger.shown())
        );
    }
    Ok(())
}
