//! Stdout for the commands: whether text may be coloured, writing that
//! survives a closed pipe, and the CSV and JSON encodings every format
//! shares. It knows nothing about operations or decisions.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use crate::cli::ListFormat;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::text::sanitize;

/// Whether text output may use colour: only on a terminal, and only when
/// the configuration allows it (`NO_COLOR`).
pub fn colour(config: &Config) -> bool {
    config.colour && io::stdout().is_terminal()
}

/// How many rows a list writes for `--limit` and `--all`: the table, for
/// people, stops at `table_default`; the machine formats write every row
/// unless told otherwise, because scripts expect the whole set (issue 9,
/// point 6).
pub fn rows_wanted(
    format: ListFormat,
    limit: Option<usize>,
    all: bool,
    table_default: usize,
) -> usize {
    match (all, limit, format) {
        (true, _, _) => usize::MAX,
        (false, Some(n), _) => n,
        (false, None, ListFormat::Table) => table_default,
        (false, None, _) => usize::MAX,
    }
}

/// The notice for rows a limit left out: `settle: showing the newest 100 of
/// 2500 operations; 2400 more match (--limit N or --all)`.
pub fn left_out(what: &str, shown: usize, total: usize) -> String {
    format!(
        "settle: showing the newest {shown} of {total} {what}; {} more match (--limit N or --all)",
        total.saturating_sub(shown)
    )
}

/// Writes to stdout. A closed pipe (`settle list | head`) is not an error:
/// it returns `false`, and the caller stops producing.
pub fn emit_page(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<bool> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|_| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(source) => Err(Error::Io {
            path: PathBuf::from("<stdout>"),
            doing: "writing output".to_string(),
            source,
        }),
    }
}

/// Writes one whole output to stdout; see [`emit_page`].
pub fn emit(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    emit_page(write).map(|_| ())
}

/// Writes `value` as indented JSON and a newline.
pub fn emit_json(value: &Value) -> Result<()> {
    emit(|out| {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        )
    })
}

/// One CSV record of `fields`, each quoted as [`csv_field`] says.
pub fn csv_line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// RFC 4180 quoting, with control characters made visible: CSV lands on
/// terminals too. A cell a spreadsheet would run as a formula (it starts
/// with `=`, `+`, `-`, `@`, TAB or CR) gets a leading `'` and quotes, as
/// OWASP's "CSV Injection" page recommends; a plain number such as `-3`
/// is data and stays as it is.
fn csv_field(value: &str) -> String {
    let clean = sanitize(value);
    if is_formula(value) {
        format!("\"'{}\"", clean.replace('"', "\"\""))
    } else if clean.contains([',', '"']) || clean.starts_with(' ') || clean.ends_with(' ') {
        format!("\"{}\"", clean.replace('"', "\"\""))
    } else {
        clean.into_owned()
    }
}

/// Whether a spreadsheet would read `value` as a formula.
fn is_formula(value: &str) -> bool {
    value.starts_with(['=', '+', '-', '@', '\t', '\r']) && !is_plain_number(value)
}

/// `-3`, `+1.5`: a sign, digits, at most one decimal point.
fn is_plain_number(value: &str) -> bool {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    !whole.is_empty()
        && !fraction.is_empty()
        && whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_neutralised_and_numbers_kept() {
        let cells = [
            "=HYPERLINK(\"http://x\",\"y\")",
            "+1+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
            "-3",
            "+1.5",
            "a=b",
        ]
        .map(String::from);
        assert_eq!(
            csv_line(&cells),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",\"'+1+cmd|' /C calc'!A0\",\"'-2+3\",\"'@SUM(A1)\",\"'⇥=1\",\"'␍=1\",-3,+1.5,a=b"
        );
    }

    proptest::proptest! {
        /// Whatever the ledger holds, a CSV cell carries no control
        /// character and never starts a formula (a plain number aside).
        #[test]
        fn no_cell_is_a_formula_or_carries_a_control(value in "\\PC*|[=+@\t\r-].*") {
            let cell = csv_field(&value);
            proptest::prop_assert!(!cell.chars().any(char::is_control), "{cell:?}");
            let unquoted = cell.strip_prefix('"').unwrap_or(&cell);
            proptest::prop_assert!(
                !unquoted.starts_with(['=', '+', '-', '@']) || is_plain_number(&value),
                "{cell:?}"
            );
        }
    }
}
