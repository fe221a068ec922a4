//! How a SQLite cell reads as text or as an integer, whatever its storage
//! class: the rest of tolerant reading (required columns, times, flags) is
//! [`CellRead`]'s, the same on both backends. Conversions only; no SQL.

use rusqlite::Row;
use rusqlite::types::ValueRef;

use crate::domain::Malformed;
use crate::store::cells::{CellRead, cap};
use crate::text::sanitize;

/// One row being read, and the malformed cells met so far.
pub(super) struct Cells<'a, 'r> {
    row: &'a Row<'r>,
    malformed: Vec<Malformed>,
}

impl<'a, 'r> Cells<'a, 'r> {
    pub fn new(row: &'a Row<'r>) -> Self {
        Cells {
            row,
            malformed: Vec::new(),
        }
    }

    /// The row itself, for a reader that takes a cell as it is.
    pub fn row(&self) -> &'a Row<'r> {
        self.row
    }
}

impl CellRead for Cells<'_, '_> {
    type Error = rusqlite::Error;

    /// Invalid UTF-8 is decoded lossily (U+FFFD marks each bad sequence)
    /// and a BLOB reads as `<blob N bytes>`, both flagged; a number is its
    /// text, as SQLite itself would show it.
    fn opt_text(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<String>> {
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

    /// Text, a fraction or a BLOB is flagged and reads as `None`.
    fn opt_int(&mut self, i: usize, column: &'static str) -> rusqlite::Result<Option<i64>> {
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

    fn is_null(&mut self, i: usize) -> rusqlite::Result<bool> {
        Ok(matches!(self.row.get_ref(i)?, ValueRef::Null))
    }

    fn malformed(&mut self) -> &mut Vec<Malformed> {
        &mut self.malformed
    }
}

fn blob(bytes: &[u8]) -> String {
    format!("a {}-byte BLOB", bytes.len())
}
