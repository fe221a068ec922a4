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

/// `settle man` prints a roff page with the sections an operator looks
/// for, and `man -l -` renders it (where man is installed).
#[test]
fn man_prints_a_page_man_renders() {
    let out = settle(&["man"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = stdout(&out);
    for section in [
        ".TH settle 1",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH EXAMPLES",
    ] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    for variable in [
        "SETTLE_OPERATOR",
        "PGPASSWORD",
        "NO_COLOR",
        "XDG_CONFIG_HOME",
    ] {
        assert!(page.contains(variable), "{variable} missing");
    }
    let Ok(mut man) = std::process::Command::new("man")
        .args(["-l", "-"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("man is not installed: the page is not rendered");
        return;
    };
    use std::io::Write;
    man.stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let rendered = man.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    for heading in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
        assert!(text.contains(heading), "{heading} not rendered:\n{text}");
    }
    assert!(text.contains("settle list ledger.db --queue"), "{text}");
}
