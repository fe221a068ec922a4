//! `settle man`: prints the roff man page. clap_mangen writes its synopsis,
//! options and commands from the same definitions as `--help` and the
//! completions, so the three cannot disagree; the sections clap knows
//! nothing of (exit status, environment, files, examples) are written here.

use std::io::Write;

use clap_mangen::Man;
use roff::{Roff, bold, roman};

use crate::cli::Cli;
use crate::error::{Error, Result};

/// The exit codes `Error::exit_code` maps errors to, and what each means.
const EXIT_STATUS: [(&str, &str); 7] = [
    ("0", "Success."),
    (
        "1",
        "An error: a ledger or file that cannot be read or written, a bad address; \
         `audit --verify`: the decision chain is broken.",
    ),
    (
        "2",
        "Usage: a flag or argument is wrong; `decide --filter`: the count differs from \
         --expect-count (nothing written).",
    ),
    (
        "3",
        "Refused by a rule of the operation's contract (nothing written); \
         `decide --filter`: some row was refused.",
    ),
    (
        "4",
        "Version conflict: another writer changed the operation since it was read \
         (nothing written); `decide --filter`: some row changed since it was listed.",
    ),
    (
        "5",
        "Ledger busy: another process held the write lock past --wait (nothing written).",
    ),
    (
        "6",
        "`probe`: a receiver's lookup read unknown (the answer is recorded).",
    ),
];

const ENVIRONMENT: [(&str, &str); 8] = [
    (
        "SETTLE_OPERATOR",
        "Who decides, for the audit trail, when --operator is not given; else the \
         account name of the process's uid.",
    ),
    (
        "SETTLE_PG_STATEMENT_TIMEOUT_MS",
        "PostgreSQL: the statement timeout settle sets on its connections, in milliseconds.",
    ),
    (
        "SETTLE_OP_ID, SETTLE_ACCOUNT, SETTLE_OP_TYPE, SETTLE_KEY, SETTLE_FINGERPRINT, \
         SETTLE_PARAMS, SETTLE_ATTEMPT",
        "Set by settle for a receiver's lookup and retry commands: the operation they are asked about.",
    ),
    (
        "PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE",
        "Fill what a PostgreSQL address leaves out, as libpq does.",
    ),
    (
        "PGSSLMODE, PGSSLROOTCERT",
        "TLS for PostgreSQL when the address does not say: disable, prefer, require, \
         verify-ca or verify-full, and the root certificate to verify against.",
    ),
    (
        "NO_COLOR",
        "Set and not empty: no colour, in the console or in text output (https://no-color.org).",
    ),
    (
        "XDG_CONFIG_HOME",
        "Where settle's files are looked for, under settle/; default ~/.config.",
    ),
    ("HOME", "Gives ~/.config when XDG_CONFIG_HOME is not set."),
];

const FILES: [(&str, &str); 3] = [
    (
        "$XDG_CONFIG_HOME/settle/config.toml",
        "Named ledgers: [ledgers.NAME] tables with address (a path or a PostgreSQL address) \
         and, optionally, receivers, drill_dir and read_only = true; @NAME then stands for the \
         ledger wherever LEDGER goes (`settle ledgers` lists them). [groups.NAME] with \
         ledgers = [\"a\", \"b\"] names several at once: list, count and show read them \
         merged, each row naming its ledger, and NAME:ID says whose operation (show, decide).",
    ),
    (
        "$XDG_CONFIG_HOME/settle/keymap",
        "Key bindings overriding the console's defaults, one `MODE KEY ACTION` a line \
         (--keymap FILE instead).",
    ),
    (
        "$XDG_CONFIG_HOME/settle/receivers.toml",
        "The receivers: per op type, the lookup and retry commands that probes and the \
         worker run (--receivers FILE instead).",
    ),
];

const EXAMPLES: [(&str, &str); 11] = [
    ("Open the console on sample data:", "settle demo"),
    ("Open the console on a ledger:", "settle ledger.db"),
    (
        "The same on PostgreSQL:",
        "settle 'postgres://ops@db1/ledger?sslmode=verify-full'",
    ),
    ("What needs a person:", "settle list ledger.db --queue"),
    (
        "The same on a ledger named in config.toml:",
        "settle list @payments --queue",
    ),
    (
        "One incident's queue over a group of ledgers, merged:",
        "settle list @incident --queue",
    ),
    (
        "How many each ledger holds, and the total:",
        "settle count @incident --queue",
    ),
    (
        "One operation, with what may be decided:",
        "settle show ledger.db acme/create_report/k-42",
    ),
    (
        "Record that the effect exists:",
        "settle decide ledger.db 42 --applied --result-id report-1 --expect-version 3",
    ),
    (
        "Ask the receiver, and record the answer:",
        "settle probe ledger.db 42 --receivers receivers.toml",
    ),
    (
        "Install this page:",
        "settle man > ~/.local/share/man/man1/settle.1",
    ),
];

pub fn run() -> Result<()> {
    let page = page().map_err(stdout_error)?;
    std::io::stdout().write_all(&page).map_err(stdout_error)
}

fn stdout_error(source: std::io::Error) -> Error {
    Error::Io {
        path: "stdout".into(),
        doing: "writing the man page".to_string(),
        source,
    }
}

/// The whole page, in roff.
fn page() -> std::io::Result<Vec<u8>> {
    let man = Man::new(<Cli as clap::CommandFactory>::command());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    let mut extra = Roff::new();
    list(&mut extra, "EXIT STATUS", &EXIT_STATUS);
    list(&mut extra, "ENVIRONMENT", &ENVIRONMENT);
    list(&mut extra, "FILES", &FILES);
    extra.control("SH", ["EXAMPLES"]);
    for (what, command) in EXAMPLES {
        extra.control("TP", []).text([roman(what)]);
        extra.text([bold(command)]);
    }
    extra.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// A section of tagged paragraphs: the term in bold, its meaning below.
fn list(roff: &mut Roff, title: &str, items: &[(&str, &str)]) {
    roff.control("SH", [title]);
    for (term, meaning) in items {
        roff.control("TP", [])
            .text([bold(*term)])
            .text([roman(*meaning)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_the_sections_clap_does_not_write() {
        let page = String::from_utf8(page().unwrap()).unwrap();
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH EXAMPLES",
        ] {
            assert!(page.contains(section), "{section} missing");
        }
    }
}
