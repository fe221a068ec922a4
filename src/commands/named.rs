//! `@NAME` on the command line: each LEDGER that names a ledger of
//! config.toml is replaced by its address, and the ledger's receivers file,
//! drill folder and read-only wish stand in for the flags not given; and
//! `settle ledgers`, which lists the names.

use std::path::PathBuf;

use crate::cli::config::Environment;
use crate::cli::named::{Ledgers, NamedLedger};
use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::store::postgres::{Reads, with_reads};

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
    let flag = cli.reads;
    let mut defaults = resolve_set(cli, &mut ledgers)?;
    for arg in cli.ledger_args() {
        let Some(name) = arg.value.to_str().and_then(|v| v.strip_prefix('@')) else {
            if let Some(reads) = flag {
                *arg.value = with_reads(arg.value, reads);
            }
            continue;
        };
        let loaded = loaded(&mut ledgers)?;
        if let Some((_, members)) = loaded.groups.iter().find(|(g, _)| g == name) {
            return Err(Error::Usage(format!(
                "@{name} is a group of ledgers ({}) in {}; this command takes one ledger: name one of them",
                members.join(", "),
                loaded.path.display()
            )));
        }
        let named = loaded.get(name)?.clone();
        refuse_read_only(&named, arg.writes, loaded)?;
        *arg.value = address_of(&named, flag);
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

/// The config file's ledgers, read the first time a name needs them.
fn loaded(ledgers: &mut Option<Ledgers>) -> Result<&Ledgers> {
    if ledgers.is_none() {
        *ledgers = Some(Ledgers::load(&config_file()?)?);
    }
    ledgers
        .as_ref()
        .ok_or_else(|| Error::Usage("the named ledgers could not be read".to_string()))
}

/// A named ledger's address, with `--reads` (else its own `reads`) in it.
fn address_of(named: &NamedLedger, flag: Option<Reads>) -> PathBuf {
    match flag.or(named.reads) {
        Some(reads) => with_reads(&named.address, reads),
        None => named.address.clone(),
    }
}

fn refuse_read_only(named: &NamedLedger, writes: bool, ledgers: &Ledgers) -> Result<()> {
    match read_only_refusal(named, ledgers) {
        Some(why) if writes => Err(Error::Usage(why)),
        _ => Ok(()),
    }
}

/// Why a command may not write to `named`, if it is named read-only.
fn read_only_refusal(named: &NamedLedger, ledgers: &Ledgers) -> Option<String> {
    named.read_only.then(|| {
        format!(
            "@{} is read-only in {} (read_only = true); this command writes to it",
            named.name,
            ledgers.path.display()
        )
    })
}

/// The ledger set of a command that takes several LEDGERs (or a group):
/// each `@NAME` expanded, each member named. A single named ledger is
/// returned, to lend its receivers and drill folder as before.
fn resolve_set(cli: &mut Cli, ledgers: &mut Option<Ledgers>) -> Result<Option<NamedLedger>> {
    let flag = cli.reads;
    let Some((raw, set, writes)) = cli.ledger_set_args() else {
        return Ok(None);
    };
    let mut single = None;
    for value in raw {
        let Some(name) = value.to_str().and_then(|v| v.strip_prefix('@')) else {
            let address = match flag {
                Some(reads) => with_reads(value, reads),
                None => value.clone(),
            };
            set.push(None, address, None);
            continue;
        };
        let loaded = loaded(ledgers)?;
        let expanded = loaded.expand(name)?;
        for named in &expanded {
            // Of a group, only the ledger a write picks out must take it.
            if expanded.len() == 1 {
                refuse_read_only(named, writes, loaded)?;
            }
            let address = address_of(named, flag);
            let refused = read_only_refusal(named, loaded);
            set.push_member(Some(&named.name), address, named.receivers.clone(), refused);
        }
        single = match expanded[..] {
            [one] if raw.len() == 1 => Some(one.clone()),
            _ => None,
        };
    }
    // The commands that write take their one ledger where they always did.
    match &mut cli.command {
        Some(Command::Decide(a)) => one_address(&a.set, &mut a.ledger),
        Some(Command::Probe(a)) => one_address(&a.set, &mut a.ledger),
        _ => {}
    }
    Ok(single)
}

/// Puts a one-ledger set's address in `ledger`.
fn one_address(set: &crate::cli::ledger_set::LedgerSet, ledger: &mut PathBuf) {
    if let [one] = &set.members[..] {
        *ledger = one.address.clone();
    }
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
    let names = ledgers.named.iter().map(|l| l.name.len());
    let groups = ledgers.groups.iter().map(|(g, _)| g.len());
    let width = names.chain(groups).max().unwrap_or(0);
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
    for (group, members) in &ledgers.groups {
        println!(
            "@{:<width$}  group: {}",
            crate::text::sanitize(group),
            crate::text::sanitize(&members.join(", "))
        );
    }
    Ok(())
}
