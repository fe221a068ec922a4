//! The columns and cell rules of an exported row, one place for `settle
//! list` / `settle audit` (csv, jsonl, json) and the console's export: an
//! operation or a decision as CSV or JSON, CSV cells sanitised and formula
//! cells neutralised, and a file written whole or not at all. Reads no
//! ledger and knows no screen: callers stream rows into it.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::domain::{Decision, Malformed, OperationRow};
use crate::error::{Error, Result};
use crate::text::sanitize;

/// The formats a file can be exported in, chosen by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Csv,
    Jsonl,
}

impl FileFormat {
    /// What the operator is told when a name has neither extension.
    pub const EXTENSIONS: &'static str = ".csv or .jsonl";

    /// The format a file name asks for: `.csv` or `.jsonl`, any case.
    pub fn of(path: &Path) -> Option<FileFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(FileFormat::Csv),
            "jsonl" => Some(FileFormat::Jsonl),
            _ => None,
        }
    }
}

pub const OPERATION_CSV_HEADER: &str = "id,state,stale_reservation,account,op_type,idem_key,attempts,max_attempts,last_event,last_error,result_id,created_at,updated_at,version,malformed";

pub const DECISION_CSV_HEADER: &str = "id,op_id,decision,from_state,to_state,result_id,evidence,note,operator,decided_at,op_version,undoes";

/// An operation for scripts: every column, exact values.
pub fn operation_json(row: &OperationRow, now: DateTime<Utc>) -> Value {
    json!({
        "id": row.id.0,
        "state": row.state.as_str(),
        "stale_reservation": row.is_stale_reservation(now),
        "account": row.account,
        "op_type": row.op_type,
        "idem_key": row.idem_key,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "last_event": row.last_event,
        "last_error": row.last_error,
        "retry_status": row.retry_status,
        "result_id": row.result_id,
        "lease_expires_at": row.lease_expires_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "version": row.version,
        "malformed": malformed_json(&row.malformed),
    })
}

/// Malformed cells for scripts: `[{"column": "account", "found": "…"}]`,
/// empty for a sound row.
pub fn malformed_json(cells: &[Malformed]) -> Value {
    cells
        .iter()
        .map(|m| json!({ "column": m.column, "found": m.found }))
        .collect()
}

/// An operation as one CSV record under [`OPERATION_CSV_HEADER`].
pub fn operation_csv(row: &OperationRow, now: DateTime<Utc>) -> String {
    let fields = [
        row.id.to_string(),
        row.state.to_string(),
        row.is_stale_reservation(now).to_string(),
        row.account.clone(),
        row.op_type.clone(),
        row.idem_key.clone(),
        row.attempts.to_string(),
        row.max_attempts.to_string(),
        row.last_event.clone().unwrap_or_default(),
        row.last_error.clone().unwrap_or_default(),
        row.result_id.clone().unwrap_or_default(),
        row.created_at.clone(),
        row.updated_at.clone(),
        row.version.to_string(),
        Malformed::describe(&row.malformed),
    ];
    csv_line(&fields)
}

/// A decision as one CSV record under [`DECISION_CSV_HEADER`].
pub fn decision_csv(d: &Decision) -> String {
    csv_line(&[
        d.id.to_string(),
        d.op_id.to_string(),
        d.decision.clone(),
        d.from_state.clone(),
        d.to_state.clone(),
        d.result_id.clone().unwrap_or_default(),
        d.evidence.clone().unwrap_or_default(),
        d.note.clone().unwrap_or_default(),
        d.operator.clone(),
        d.decided_at.clone(),
        d.op_version.to_string(),
        d.undoes.map(|u| u.to_string()).unwrap_or_default(),
    ])
}

/// A decision for scripts: every column, exact values.
pub fn decision_json(d: &Decision) -> Value {
    json!({
        "id": d.id.0,
        "op_id": d.op_id.0,
        "decision": d.decision,
        "from_state": d.from_state,
        "to_state": d.to_state,
        "result_id": d.result_id,
        "evidence": d.evidence,
        "note": d.note,
        "operator": d.operator,
        "decided_at": d.decided_at,
        "op_version": d.op_version,
        "undoes": d.undoes.map(|u| u.0),
    })
}

/// What an export did with its file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The file holds this many rows.
    Rows(u64),
    /// The file was there already; it is left as it was and nothing was
    /// written.
    Exists,
}

/// Writes `path` whole or not at all: `write_rows` fills a temporary file
/// beside it (and says how many rows it wrote), which takes the name only
/// once complete, so a reader of `path` never sees half an export. An
/// existing `path` is never replaced, and the temporary file is removed
/// whatever happens.
pub fn write_new_file(
    path: &Path,
    write_rows: impl FnOnce(&mut dyn Write) -> Result<u64>,
) -> Result<Written> {
    if path.exists() {
        return Ok(Written::Exists);
    }
    let temp = temp_beside(path);
    let result = fill_and_link(path, &temp, write_rows);
    let _ = fs::remove_file(&temp);
    result
}

/// The error of a failed write to `path`, for `write_rows` to return.
pub fn write_failed(path: &Path, source: io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        doing: "writing the export".to_string(),
        source,
    }
}

fn fill_and_link(
    path: &Path,
    temp: &Path,
    write_rows: impl FnOnce(&mut dyn Write) -> Result<u64>,
) -> Result<Written> {
    let failed = |doing: &str, source| Error::Io {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        source,
    };
    let file = File::create_new(temp).map_err(|e| failed("creating the export", e))?;
    let mut out = BufWriter::new(file);
    let n = write_rows(&mut out)?;
    let file = out
        .into_inner()
        .map_err(|e| failed("writing the export", e.into_error()))?;
    file.sync_all()
        .map_err(|e| failed("writing the export", e))?;
    // A link, unlike a rename, refuses a name that exists: an export that
    // raced another writer of the same name loses rather than clobbers.
    match fs::hard_link(temp, path) {
        Ok(()) => Ok(Written::Rows(n)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Written::Exists),
        Err(e) => Err(failed("naming the finished export", e)),
    }
}

/// `DIR/.NAME.settle-tmp-PID`: hidden, in the same directory (a rename or
/// link never crosses a file system), one per process.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.settle-tmp-{}", std::process::id()))
}

/// One CSV record of `fields` (no line end), each cell as [`csv_field`]
/// writes it.
pub fn csv_line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// One cell, quoted and escaped by the `csv` crate, with control characters
/// made visible: CSV lands on terminals too. A cell a spreadsheet would run
/// as a formula (it starts with `=`, `+`, `-`, `@`, TAB or CR) gets a
/// leading `'` and is always quoted, as OWASP's "CSV Injection" page
/// recommends; a plain number such as `-3` is data and stays as it is. A
/// cell with a leading or trailing space is quoted too, so a spreadsheet
/// that trims unquoted cells keeps the space.
fn csv_field(value: &str) -> String {
    let clean = sanitize(value);
    let (cell, style) = if is_formula(value) {
        (format!("'{clean}").into(), csv::QuoteStyle::Always)
    } else if clean.starts_with(' ') || clean.ends_with(' ') {
        (clean, csv::QuoteStyle::Always)
    } else {
        (clean, csv::QuoteStyle::Necessary)
    };
    if cell.is_empty() {
        // Alone in a record the crate writes `""` (an empty record would
        // be no line at all); among other cells an empty one is just empty.
        return String::new();
    }
    let mut writer = csv::WriterBuilder::new()
        .quote_style(style)
        .from_writer(Vec::new());
    // Writing to memory cannot fail, and the cell is sanitised text, so the
    // bytes are UTF-8; the record's line end is the caller's.
    let bytes = writer
        .write_record([cell.as_bytes()])
        .ok()
        .and_then(|()| writer.into_inner().ok())
        .unwrap_or_default();
    let mut text = String::from_utf8(bytes).unwrap_or_default();
    text.truncate(text.trim_end_matches('\n').len());
    text
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
    fn a_finished_export_takes_the_name_and_an_existing_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let line = |text: &'static str| {
            let path = path.clone();
            move |out: &mut dyn Write| {
                writeln!(out, "{text}").map_err(|e| write_failed(&path, e))?;
                Ok(1)
            }
        };
        assert_eq!(write_new_file(&path, line("a")).unwrap(), Written::Rows(1));
        assert_eq!(fs::read_to_string(&path).unwrap(), "a\n");
        assert_eq!(write_new_file(&path, line("b")).unwrap(), Written::Exists);
        assert_eq!(fs::read_to_string(&path).unwrap(), "a\n");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn rows_that_fail_halfway_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let failed = write_new_file(&path, |out| {
            writeln!(out, "{{}}").map_err(|e| write_failed(&path, e))?;
            Err(Error::Usage("ledger gone".to_string()))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_extension_chooses_the_format() {
        assert_eq!(FileFormat::of(Path::new("a.CSV")), Some(FileFormat::Csv));
        assert_eq!(
            FileFormat::of(Path::new("a.jsonl")),
            Some(FileFormat::Jsonl)
        );
        assert_eq!(FileFormat::of(Path::new("a.json")), None);
        assert_eq!(FileFormat::of(Path::new("a")), None);
    }

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
        /// A CSV reader gets every cell back, one per field, as it was
        /// shown (sanitised, a formula with its leading `'`): no cell's
        /// comma or quote splits or joins fields.
        #[test]
        fn a_csv_reader_reads_back_every_cell(cells in proptest::collection::vec("\\PC*|[=+@ ,\"-].*", 2..6)) {
            let line = csv_line(&cells);
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(line.as_bytes());
            let record = reader.records().next().unwrap().unwrap();
            proptest::prop_assert_eq!(record.len(), cells.len(), "{}", line);
            for (read, cell) in record.iter().zip(&cells) {
                let shown = sanitize(cell);
                let expected = if is_formula(cell) { format!("'{shown}") } else { shown.into_owned() };
                proptest::prop_assert_eq!(read, expected.as_str());
            }
        }

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
