//! What operators expect of a command-line tool, through the real binary:
//! `--help` says what LEDGER may be, `settle man` prints a man page, and
//! named ledgers in config.toml stand for their addresses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

/// `--help` names both kinds of ledger, for the console and for every
/// command that takes one, and none still says "SQLite file" alone.
#[test]
fn help_names_both_kinds_of_ledger() {
    let top = stdout(&settle(&["--help"]));
    assert!(
        top.contains("a SQLite file or a PostgreSQL address"),
        "{top}"
    );
    for form in ["postgres://", "postgresql://", "key=value"] {
        assert!(top.contains(form), "{form} missing from:\n{top}");
    }
    for command in [
        "list", "show", "decide", "probe", "audit", "adopt", "worker",
    ] {
        let help = stdout(&settle(&[command, "--help"]));
        assert!(help.contains("PostgreSQL address"), "{command}:\n{help}");
        assert!(!help.contains("(SQLite file)"), "{command}:\n{help}");
    }
}
