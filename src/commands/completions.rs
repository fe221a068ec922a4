//! `settle completions SHELL`: prints the shell completions clap derives
//! from the command line; reads nothing else.

use crate::cli::Cli;
use crate::error::Result;

pub fn run(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "settle", &mut std::io::stdout());
    Ok(())
}
