//! Reads a row's cells tolerantly: whatever SQLite holds in a cell, a value
//! comes back, and a cell its column does not allow is noted as
//! [`Malformed`] instead of failing the whole query (issue 9, point 3: one
//! bad cell must never hide every other row). Conversions only; no SQL.

use rusqlite::Row;
use rusqlite::types::ValueRef;

use crate::domain::{Malformed, TIME_FORMATS, parse_time};
use crate::text::sanitize;

/// One row being read, and the malformed cells met so far.
pub(crate) struct Cells<'a, 'r> {
    row: &'a Row<'r>,
    pub malformed: Vec<Malformed>,
}

impl<'a, 'r> Cells<'a, 'r> {
    pub fn new(row: &'a Row<'r>) -> Self {
        Cells {
            row,
            malformed: Vec::new(),
        }
    }

    fn flag(&mut self, column: &'static str, found: String) {
        self.malformed.push(Malformed { column, found });
    }

    /// Text the column requires: NULL reads as a flagged empty string.
    pub fn text(&mut self, i: usize, column: &'static str) -> rusqlite::Result<String> {
        Ok(match self.opt_text(i, column)? {
            Some(t) => t,
            None => {
                self.flag(column, "NULL".to_string());
                String::new()
            }
        })
    }

    /// Text or NULL. Invalid UTF-8 is decoded lossily (U+FFFD marks each bad
    /// sequence) and a BLOB reads as `<blob N bytes>`, both flagged; a
    /// number is its text, as SQLite itself would show it.
    pub fn opt_text(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<String>> {
        Ok(match self.row.get_ref(i)? {
            ValueRef::Null => None,
            ValueRef::Text(bytes) => Some(match std::str::from_utf8(bytes) {
                Ok(s) => s.to_string(),
                Err(_) => {
                    self.flag(column, "invalid UTF-8, shown with U+FFFD".to_string());
                    String::from_utf8_lossy(bytes).into_owned()
                }
            }),
            ValueRef::Blob(bytes) => {
                self.flag(column, blob(bytes));
                Some(format!("<blob {} bytes>", bytes.len()))
            }
            ValueRef::Integer(n) => Some(n.to_string()),
            ValueRef::Real(x) => Some(x.to_string()),
        })
    }

    /// A time the column requires: see [`Cells::opt_time`].
    pub fn time(&mut self, i: usize, column: &'static str) -> rusqlite::Result<String> {
        let text = self.text(i, column)?;
        self.check_time(column, &text);
        Ok(text)
    }

    /// A time or NULL, kept as written; text [`parse_time`] cannot read is
    /// flagged, so an unreadable lease or deadline is shown as such rather
    /// than silently judged never or now (issue 9, point 5).
    pub fn opt_time(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<String>> {
        let text = self.opt_text(i, column)?;
        if let Some(t) = &text {
            self.check_time(column, t);
        }
        Ok(text)
    }

    fn check_time(&mut self, column: &'static str, text: &str) {
        let flagged = self.malformed.iter().any(|m| m.column == column);
        if !flagged && parse_time(text).is_none() {
            self.flag(
                column,
                format!("not a time: \"{}\" ({TIME_FORMATS})", sanitize(&cap(text))),
            );
        }
    }

    /// An integer the column requires: anything else reads as a flagged 0.
    pub fn int(&mut self, i: usize, column: &'static str) -> rusqlite::Result<i64> {
        Ok(match self.opt_int(i, column)? {
            Some(n) => n,
            None => {
                if matches!(self.row.get_ref(i)?, ValueRef::Null) {
                    self.flag(column, "NULL".to_string());
                }
                0
            }
        })
    }

    /// An integer or NULL: text, a fraction or a BLOB is flagged and reads
    /// as `None`, never as a guess.
    pub fn opt_int(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<i64>> {
        Ok(match self.row.get_ref(i)? {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n),
            ValueRef::Real(x) => {
                self.flag(column, format!("a real number {x}"));
                None
            }
            ValueRef::Text(bytes) => {
                let text = String::from_utf8_lossy(bytes);
                self.flag(column, format!("text \"{}\"", sanitize(&cap(&text))));
                None
            }
            ValueRef::Blob(bytes) => {
                self.flag(column, blob(bytes));
                None
            }
        })
    }
}

fn blob(bytes: &[u8]) -> String {
    format!("a {}-byte BLOB", bytes.len())
}

/// The first 40 characters, so a flag stays one line.
fn cap(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}

impl crate::store::rows::CellRead for Cells<'_, '_> {
    type Error = rusqlite::Error;
    fn text(&mut self, i: usize, column: &'static str) -> rusqlite::Result<String> {
        Cells::text(self, i, column)
    }
    fn opt_text(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<String>> {
        Cells::opt_text(self, i, column)
    }
    fn time(&mut self, i: usize, column: &'static str) -> rusqlite::Result<String> {
        Cells::time(self, i, column)
    }
    fn opt_time(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<String>> {
        Cells::opt_time(self, i, column)
    }
    fn int(&mut self, i: usize, column: &'static str) -> rusqlite::Result<i64> {
        Cells::int(self, i, column)
    }
    fn opt_int(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<i64>> {
        Cells::opt_int(self, i, column)
    }
    fn take_malformed(&mut self) -> Vec<Malformed> {
        std::mem::take(&mut self.malformed)
    }
}
