//! The `settle` binary: parse the command line, run it, map the error to the
//! documented exit status (1 error, 2 usage, 3 refused, 4 version conflict,
//! 5 ledger busy, 6 a probe read unknown).

use clap::Parser;

fn main() {
    let cli = settle::cli::Cli::parse();
    if let Err(e) = settle::commands::run(cli) {
        eprintln!("settle: {e}");
        std::process::exit(e.exit_code());
    }
}
