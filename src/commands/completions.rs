//! `settle completions SHELL`: prints the shell completions clap derives
//! from the command line and, for bash and fish, the completion of
//! `@NAME` from `settle ledgers` (clap's scripts know the flags, not the
//! names a config file holds).

use std::io::Write;

use clap_complete::Shell;

use crate::cli::Cli;
use crate::error::{Error, Result};

/// Bash: a word starting with `@` completes from `settle ledgers`; any
/// other word goes to clap's `_settle`.
const BASH_NAMES: &str = r#"
_settle_named() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    if [[ "$cur" == @* ]]; then
        COMPREPLY=( $(compgen -W "$(settle ledgers 2>/dev/null | cut -d' ' -f1)" -- "$cur") )
        return 0
    fi
    _settle "$@"
}
complete -F _settle_named -o bashdefault -o default settle
"#;

/// Fish: the names of `settle ledgers` where a word starts with `@`.
const FISH_NAMES: &str = r#"
complete -c settle -n 'string match -q -- "@*" (commandline -ct)' -f -a '(settle ledgers 2>/dev/null | string split -f1 " ")'
"#;

pub fn run(shell: Shell) -> Result<()> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "settle", &mut script);
    match shell {
        Shell::Bash => script.extend_from_slice(BASH_NAMES.as_bytes()),
        Shell::Fish => script.extend_from_slice(FISH_NAMES.as_bytes()),
        _ => {}
    }
    // Written whole, so a closed pipe (`| head`) is an error, not a panic
    // inside clap_complete.
    std::io::stdout()
        .write_all(&script)
        .map_err(|source| Error::Io {
            path: "stdout".into(),
            doing: "writing the completions".to_string(),
            source,
        })
}
