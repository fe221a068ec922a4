//! Reads a PostgreSQL row's cells tolerantly, as [`crate::store::sqlite`]'s
//! cells do: whatever type and value a service's column holds, a value comes
//! back, and a cell its column does not allow (NULL where the contract says
//! NOT NULL, text where a number is due, a time that is not one) is noted as
//! [`Malformed`] instead of failing the page (issue 9, point 3). Times are
//! given to the domain in the form settle writes ([`format_time`]), with the
//! fraction kept when there is one. Conversions only; no SQL.

use std::error::Error as StdError;

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use postgres::Row;
use postgres::types::{FromSql, Type};

use crate::domain::{Malformed, TIME_FORMATS, parse_time};
use crate::text::sanitize;

/// A cell as the server sent it, whatever its type: decoded by [`Cells`],
/// so no column type can make the read fail.
struct Raw<'a> {
    ty: Type,
    bytes: Option<&'a [u8]>,
}

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw {
            ty: ty.clone(),
            bytes: Some(raw),
        })
    }

    fn from_sql_null(ty: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw {
            ty: ty.clone(),
            bytes: None,
        })
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A cell decoded into what settle can show.
enum Value {
    Null,
    Text(String),
    Int(i64),
    /// A time, already in the form the domain reads.
    Time(String),
    /// Anything else (a fraction, bytes, a type settle does not know): the
    /// text shown and how it is flagged where a text cell is fine with it
    /// (`None`) or not.
    Other {
        shown: String,
        flag: Option<String>,
    },
}

/// A timestamp as the ledger's text: RFC 3339 in UTC with `Z`, whole
/// seconds unless the server holds a fraction (so a keyset key read from a
/// row finds that same row again).
pub(super) fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn decode(raw: &Raw<'_>) -> Value {
    let Some(bytes) = raw.bytes else {
        return Value::Null;
    };
    let ty = &raw.ty;
    let text = |bytes: &[u8]| match std::str::from_utf8(bytes) {
        Ok(s) => Value::Text(s.to_string()),
        Err(_) => Value::Other {
            shown: String::from_utf8_lossy(bytes).into_owned(),
            flag: Some("invalid UTF-8, shown with U+FFFD".to_string()),
        },
    };
    let unreadable = || Value::Other {
        shown: format!("<{} {} bytes>", ty.name(), bytes.len()),
        flag: Some(format!("an unreadable {} value", ty.name())),
    };
    match *ty {
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::JSON | Type::UNKNOWN => {
            text(bytes)
        }
        // jsonb's binary form is a version byte, then the text.
        Type::JSONB => match bytes.split_first() {
            Some((1, rest)) => text(rest),
            _ => unreadable(),
        },
        Type::INT8 => i64::from_sql(ty, bytes).map_or_else(|_| unreadable(), Value::Int),
        Type::INT4 => {
            i32::from_sql(ty, bytes).map_or_else(|_| unreadable(), |n| Value::Int(n.into()))
        }
        Type::INT2 => {
            i16::from_sql(ty, bytes).map_or_else(|_| unreadable(), |n| Value::Int(n.into()))
        }
        Type::BOOL => bool::from_sql(ty, bytes).map_or_else(
            |_| unreadable(),
            |b| Value::Other {
                shown: b.to_string(),
                flag: None,
            },
        ),
        Type::TIMESTAMPTZ => DateTime::<Utc>::from_sql(ty, bytes)
            .map_or_else(|_| infinite(), |t| Value::Time(time_text(t))),
        // Without a zone: read as UTC, as SQLite's `datetime('now')` form is.
        Type::TIMESTAMP => NaiveDateTime::from_sql(ty, bytes)
            .map_or_else(|_| infinite(), |t| Value::Time(time_text(t.and_utc()))),
        Type::FLOAT8 => f64::from_sql(ty, bytes).map_or_else(|_| unreadable(), real),
        Type::FLOAT4 => f32::from_sql(ty, bytes).map_or_else(|_| unreadable(), |x| real(x.into())),
        Type::BYTEA => Value::Other {
            shown: format!("<blob {} bytes>", bytes.len()),
            flag: Some(format!("a {}-byte BLOB", bytes.len())),
        },
        _ => unreadable(),
    }
}

/// `infinity` and times chrono cannot hold: shown as such, never a guess.
fn infinite() -> Value {
    Value::Other {
        shown: "infinity".to_string(),
        flag: Some("a time outside what settle reads (infinity?)".to_string()),
    }
}

fn real(x: f64) -> Value {
    Value::Other {
        shown: x.to_string(),
        flag: None,
    }
}

/// One row being read, and the malformed cells met so far.
pub(super) struct Cells<'r> {
    row: &'r Row,
    pub malformed: Vec<Malformed>,
}

impl<'r> Cells<'r> {
    pub fn new(row: &'r Row) -> Self {
        Cells {
            row,
            malformed: Vec::new(),
        }
    }

    fn value(&self, i: usize) -> Result<Value, postgres::Error> {
        Ok(decode(&self.row.try_get::<_, Raw<'_>>(i)?))
    }

    fn flag(&mut self, column: &'static str, found: String) {
        self.malformed.push(Malformed { column, found });
    }

    /// Text the column requires: NULL reads as a flagged empty string.
    pub fn text(&mut self, i: usize, column: &'static str) -> Result<String, postgres::Error> {
        Ok(match self.opt_text(i, column)? {
            Some(t) => t,
            None => {
                self.flag(column, "NULL".to_string());
                String::new()
            }
        })
    }

    /// Text or NULL; a number or a time is its text, bytes and invalid
    /// UTF-8 are made visible and flagged.
    pub fn opt_text(
        &mut self,
        i: usize,
        column: &'static str,
    ) -> Result<Option<String>, postgres::Error> {
        Ok(match self.value(i)? {
            Value::Null => None,
            Value::Text(t) | Value::Time(t) => Some(t),
            Value::Int(n) => Some(n.to_string()),
            Value::Other { shown, flag } => {
                if let Some(found) = flag {
                    self.flag(column, found);
                }
                Some(shown)
            }
        })
    }

    /// A time the column requires: see [`Cells::opt_time`].
    pub fn time(&mut self, i: usize, column: &'static str) -> Result<String, postgres::Error> {
        let text = self.text(i, column)?;
        self.check_time(column, &text);
        Ok(text)
    }

    /// A time or NULL. A `timestamptz` always is one; a service's text
    /// column may hold anything, and what [`parse_time`] cannot read is
    /// flagged as on SQLite.
    pub fn opt_time(
        &mut self,
        i: usize,
        column: &'static str,
    ) -> Result<Option<String>, postgres::Error> {
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
    pub fn int(&mut self, i: usize, column: &'static str) -> Result<i64, postgres::Error> {
        if let Value::Null = self.value(i)? {
            self.flag(column, "NULL".to_string());
            return Ok(0);
        }
        Ok(self.opt_int(i, column)?.unwrap_or(0))
    }

    /// An integer or NULL: anything else is flagged and reads as `None`.
    pub fn opt_int(
        &mut self,
        i: usize,
        column: &'static str,
    ) -> Result<Option<i64>, postgres::Error> {
        Ok(match self.value(i)? {
            Value::Null => None,
            Value::Int(n) => Some(n),
            // Digits in a text column read as the number, as SQLite's
            // column affinity stores them; any other text is flagged.
            Value::Text(t) if t.parse::<i64>().is_ok() => t.parse().ok(),
            Value::Text(t) | Value::Time(t) => {
                self.flag(column, format!("text \"{}\"", sanitize(&cap(&t))));
                None
            }
            Value::Other { shown, flag } => {
                let found = flag.unwrap_or_else(|| format!("\"{}\"", sanitize(&cap(&shown))));
                self.flag(column, found);
                None
            }
        })
    }

    /// A yes/no the column requires (`op_types.idempotent`): a boolean, or
    /// 1/0 from a service that stores it as a number as SQLite does.
    pub fn bool(&mut self, i: usize, column: &'static str) -> Result<bool, postgres::Error> {
        Ok(match self.value(i)? {
            Value::Int(n) => n == 1,
            Value::Other { shown, flag: None } if shown == "true" || shown == "false" => {
                shown == "true"
            }
            _ => {
                self.int(i, column)?;
                false
            }
        })
    }
}

/// The first 40 characters, so a flag stays one line.
fn cap(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}

impl crate::store::rows::CellRead for Cells<'_> {
    type Error = postgres::Error;
    fn text(&mut self, i: usize, column: &'static str) -> Result<String, postgres::Error> {
        Cells::text(self, i, column)
    }
    fn opt_text(
        &mut self,
        i: usize,
        column: &'static str,
    ) -> Result<Option<String>, postgres::Error> {
        Cells::opt_text(self, i, column)
    }
    fn time(&mut self, i: usize, column: &'static str) -> Result<String, postgres::Error> {
        Cells::time(self, i, column)
    }
    fn opt_time(
        &mut self,
        i: usize,
        column: &'static str,
    ) -> Result<Option<String>, postgres::Error> {
        Cells::opt_time(self, i, column)
    }
    fn int(&mut self, i: usize, column: &'static str) -> Result<i64, postgres::Error> {
        Cells::int(self, i, column)
    }
    fn opt_int(&mut self, i: usize, column: &'static str) -> Result<Option<i64>, postgres::Error> {
        Cells::opt_int(self, i, column)
    }
    fn take_malformed(&mut self) -> Vec<Malformed> {
        std::mem::take(&mut self.malformed)
    }
}
