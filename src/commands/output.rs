//! Stdout for the commands: whether text may be coloured, writing that
//! survives a closed pipe, and the CSV and JSON encodings every format
//! shares. It knows nothing about operations or decisions.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::text::sanitize;

/// Whether text output may use colour: only on a terminal, and only when
/// the configuration allows it (`NO_COLOR`).
pub fn colour(config: &Config) -> bool {
    config.colour && io::stdout().is_terminal()
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
/// terminals too.
fn csv_field(value: &str) -> String {
    let clean = sanitize(value);
    if clean.contains([',', '"']) || clean.starts_with(' ') || clean.ends_with(' ') {
        format!("\"{}\"", clean.replace('"', "\"\""))
    } else {
        clean.into_owned()
    }
}
