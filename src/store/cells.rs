//! Reading a row's cells tolerantly, once for both backends: whatever a
//! service wrote in a cell, a value comes back, and a cell its column does
//! not allow (NULL where the contract says NOT NULL, text where a number is
//! due, a time that is not one) is noted as [`Malformed`] instead of failing
//! the query, because one bad cell must never hide every other row. A
//! backend says only how its driver's cell reads as text or as an integer;
//! what a required column, a time or a flag makes of that is said here.

use crate::domain::{Malformed, TIME_FORMATS, parse_time};
use crate::text::sanitize;

/// One row's cells, read tolerantly; `Error` is the backend's driver error
/// (a cell that cannot be read at all, such as a column index out of range).
pub(super) trait CellRead {
    type Error;

    /// Text or NULL, as the backend shows what the cell holds (a number is
    /// its text; bytes and invalid UTF-8 are made visible and flagged).
    fn opt_text(&mut self, i: usize, column: &'static str) -> Result<Option<String>, Self::Error>;

    /// An integer or NULL: anything else is flagged and reads as `None`,
    /// never as a guess.
    fn opt_int(&mut self, i: usize, column: &'static str) -> Result<Option<i64>, Self::Error>;

    /// Whether cell `i` is NULL.
    fn is_null(&mut self, i: usize) -> Result<bool, Self::Error>;

    /// The malformed cells met so far.
    fn malformed(&mut self) -> &mut Vec<Malformed>;

    /// The malformed cells met so far, taken.
    fn take_malformed(&mut self) -> Vec<Malformed> {
        std::mem::take(self.malformed())
    }

    fn flag(&mut self, column: &'static str, found: String) {
        self.malformed().push(Malformed { column, found });
    }

    /// Text the column requires: NULL reads as a flagged empty string.
    fn text(&mut self, i: usize, column: &'static str) -> Result<String, Self::Error> {
        Ok(match self.opt_text(i, column)? {
            Some(t) => t,
            None => {
                self.flag(column, "NULL".to_string());
                String::new()
            }
        })
    }

    /// A time the column requires: see [`CellRead::opt_time`].
    fn time(&mut self, i: usize, column: &'static str) -> Result<String, Self::Error> {
        let text = self.text(i, column)?;
        check_time(self.malformed(), column, &text);
        Ok(text)
    }

    /// A time or NULL, kept as written; text [`parse_time`] cannot read is
    /// flagged, so an unreadable lease or deadline is shown as such rather
    /// than silently judged never or now.
    fn opt_time(&mut self, i: usize, column: &'static str) -> Result<Option<String>, Self::Error> {
        let text = self.opt_text(i, column)?;
        if let Some(t) = &text {
            check_time(self.malformed(), column, t);
        }
        Ok(text)
    }

    /// An integer the column requires: anything else reads as a flagged 0.
    fn int(&mut self, i: usize, column: &'static str) -> Result<i64, Self::Error> {
        Ok(match self.opt_int(i, column)? {
            Some(n) => n,
            None => {
                if self.is_null(i)? {
                    self.flag(column, "NULL".to_string());
                }
                0
            }
        })
    }

    /// A yes/no the column requires (`op_types.idempotent`), stored as 1
    /// or 0 where the database has no boolean.
    fn bool(&mut self, i: usize, column: &'static str) -> Result<bool, Self::Error> {
        Ok(self.int(i, column)? == 1)
    }
}

/// Flags `text` in `column` unless it reads as a time (or the column is
/// flagged already).
fn check_time(malformed: &mut Vec<Malformed>, column: &'static str, text: &str) {
    let flagged = malformed.iter().any(|m| m.column == column);
    if !flagged && parse_time(text).is_none() {
        malformed.push(Malformed {
            column,
            found: format!("not a time: \"{}\" ({TIME_FORMATS})", sanitize(&cap(text))),
        });
    }
}

/// The first 40 characters, so a flag stays one line.
pub(super) fn cap(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}
