//! The scriptable commands, one module each: every command opens the ledger
//! through `store`, does one thing, and prints it through [`output`] in the
//! format asked for. Settings come resolved from [`crate::cli::config`]. Text
//! output is sanitised and carries no colour unless stdout is a terminal and
//! `NO_COLOR` is unset. Nothing here speaks SQL.

mod adopt;
mod audit;
mod completions;
mod console;
mod copy;
mod decide;
pub mod demo;
mod drill;
mod drill_run;
mod init;
mod ledger_arg;
mod list;
mod man;
mod named;
mod output;
mod probe;
mod progress;
mod several;
mod show;
mod table;
mod worker;

use chrono::Utc;

use crate::cli::config::Config;
use crate::cli::{Cli, Command};
use crate::error::Result;

/// Runs the parsed command line.
pub fn run(mut cli: Cli) -> Result<()> {
    let now = Utc::now();
    named::resolve(&mut cli)?;
    let config = Config::from_process(cli.flags());
    crate::store::use_mapping(cli.map.clone(), config.receivers.as_deref());
    crate::store::use_locked_after(cli.locked_after);
    crate::store::use_removal(cli.remove_not_applied);
    match cli.command {
        Some(Command::Init { ledger }) => init::run(&ledger),
        Some(Command::Adopt { ledger }) => adopt::run(&ledger),
        Some(Command::List(args)) => list::run(&args, &config, now),
        Some(Command::Count(args)) => {
            let query = list::query_of(args.queue, &args.state, args.filter.as_deref())?;
            let json = args.format == crate::cli::ShowFormat::Json;
            several::count(
                &args.set.picked(&query),
                &query.without_ledgers(),
                json,
                now,
            )
        }
        Some(Command::Show(args)) => show::run(&args, &config, now),
        Some(Command::Decide(args)) => decide::run(&args, &config, now),
        Some(Command::Probe(args)) => probe::run(&args, &config, now),
        Some(Command::Audit(args)) => audit::run(&args),
        Some(Command::Copy {
            source,
            destination,
        }) => copy::run(&source, &destination),
        Some(Command::Drill { command }) => drill::run(command, &config),
        Some(Command::Demo {
            dir,
            ledger,
            no_console,
            ..
        }) => demo::run(dir, ledger, no_console, config.for_demo(), now),
        Some(Command::Worker(args)) => worker::run(&args, &config),
        Some(Command::Receiver { command }) => crate::reference_receiver::run(command, now),
        Some(Command::Completions { shell }) => completions::run(shell),
        Some(Command::Man) => man::run(),
        Some(Command::Ledgers) => named::list(),
        None => console::run(cli.console, &config),
    }
}
