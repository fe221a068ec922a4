//! Stdout for the commands: whether text may be coloured, writing that
//! survives a closed pipe, and JSON for people. It knows nothing about
//! operations or decisions; their CSV and JSON rows are `crate::export`'s.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use crate::cli::ListFormat;
use crate::cli::config::Config;
use crate::error::{Error, Result};

/// Rows a list reads and writes a page at a time; the first page's widths
/// measure the table.
pub const PAGE: usize = 1000;

/// Whether text output may use colour: only on a terminal, and only when
/// the configuration allows it (`NO_COLOR`).
pub fn colour(config: &Config) -> bool {
    config.colour && io::stdout().is_terminal()
}

/// How many rows a list writes for `--limit` and `--all`: the table, for
/// people, stops at `table_default`; the machine formats write every row
/// unless told otherwise, because scripts expect the whole set and a
/// silently cut list reads as a complete one.
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
            crate::text::json_safe(&serde_json::to_string_pretty(value).unwrap_or_default())
        )
    })
}
