//! `settle completions SHELL`: prints the shell completions clap derives
//! from the command line and, for bash, zsh and fish, the completion of
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

/// Zsh: a word starting with `@` completes from `settle ledgers`; any
/// other word goes to clap's `_settle`.
const ZSH_NAMES: &str = r#"
_settle_named() {
    if [[ "$PREFIX" == @* ]]; then
        local -a names
        names=( ${(f)"$(settle ledgers 2>/dev/null | cut -d' ' -f1)"} )
        compadd -a names
        return
    fi
    _settle "$@"
}
"#;

/// How clap's zsh script hands over to `_settle`, whether it is sourced
/// or autoloaded from `fpath`; [`zsh`] makes it hand over to
/// `_settle_named` instead.
const ZSH_DISPATCH: &str = r#"if [ "$funcstack[1]" = "_settle" ]; then
    _settle "$@"
else
    compdef _settle settle
fi"#;

/// Clap's zsh script with the names' completion put in front of
/// `_settle`. Should clap change its last lines, the names are still
/// completed where the script is sourced.
fn zsh(script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let named = ZSH_DISPATCH
        .replace("_settle \"$@\"", "_settle_named \"$@\"")
        .replace("compdef _settle settle", "compdef _settle_named settle");
    let out = match text.rfind(ZSH_DISPATCH) {
        Some(at) => format!(
            "{}{ZSH_NAMES}\n{named}{}",
            &text[..at],
            &text[at + ZSH_DISPATCH.len()..]
        ),
        None => format!("{text}{ZSH_NAMES}compdef _settle_named settle\n"),
    };
    out.into_bytes()
}

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
        Shell::Zsh => script = zsh(&script),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The script clap writes today, and one whose end clap changed: both
    /// hand `settle` over to `_settle_named`.
    #[test]
    fn zsh_hands_completion_to_the_names_first() {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        let mut script = Vec::new();
        clap_complete::generate(Shell::Zsh, &mut cmd, "settle", &mut script);
        let ours = String::from_utf8(zsh(&script)).unwrap();
        assert!(ours.contains("compdef _settle_named settle"), "{ours}");
        assert!(ours.contains("    _settle_named \"$@\"\nelse"), "{ours}");
        assert!(!ours.contains("compdef _settle settle"), "{ours}");
        assert!(ours.find("_settle_named() {") < ours.find("compdef _settle_named"));
        let changed = String::from_utf8(zsh(b"_settle() { }\ncompdef _settle settle\n")).unwrap();
        assert!(
            changed.ends_with("compdef _settle_named settle\n"),
            "{changed}"
        );
    }
}
