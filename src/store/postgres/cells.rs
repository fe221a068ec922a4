//! How a PostgreSQL cell reads as text or as an integer, whatever type and
//! value a service's column holds: the rest of tolerant reading (required
//! columns, times, flags) is [`CellRead`]'s, the same on both backends.
//! Times are given to the domain in the form settle writes
//! ([`crate::domain::format_time`]), with the fraction kept when there is
//! one. Conversions only; no SQL.

use std::error::Error as StdError;

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use postgres::Row;
use postgres::types::{FromSql, Type};

use crate::domain::Malformed;
use crate::store::cells::{CellRead, cap};
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

/// [`time_text`] written at the end of `out`: the same text without a
/// `String` of its own or the formatter's machinery, for the millions of
/// times a copy reads.
pub(super) fn push_time_text(t: DateTime<Utc>, out: &mut String) {
    use chrono::{Datelike, Timelike};
    let nanos = t.nanosecond();
    let Ok(year @ 0..=9999) = u32::try_from(t.year()) else {
        // A year of other than four digits as chrono writes it.
        out.push_str(&time_text(t));
        return;
    };
    if nanos >= 1_000_000_000 {
        // A leap second, likewise.
        out.push_str(&time_text(t));
        return;
    }
    digits(out, year, 4);
    out.push('-');
    digits(out, t.month(), 2);
    out.push('-');
    digits(out, t.day(), 2);
    out.push('T');
    digits(out, t.hour(), 2);
    out.push(':');
    digits(out, t.minute(), 2);
    out.push(':');
    digits(out, t.second(), 2);
    // The fraction as `SecondsFormat::AutoSi` gives it: none, or 3, 6 or 9
    // digits, as few as hold it.
    if nanos != 0 {
        out.push('.');
        if nanos.is_multiple_of(1_000_000) {
            digits(out, nanos / 1_000_000, 3);
        } else if nanos.is_multiple_of(1_000) {
            digits(out, nanos / 1_000, 6);
        } else {
            digits(out, nanos, 9);
        }
    }
    out.push('Z');
}

/// `n`'s last `width` decimal digits, zeros in front.
fn digits(out: &mut String, n: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = n / 10u32.pow(place) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// A type whose binary form is its UTF-8 text.
fn is_text(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::JSON | Type::UNKNOWN
    )
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
        _ if is_text(ty) => text(bytes),
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
pub(crate) struct Cells<'r> {
    row: &'r Row,
    malformed: Vec<Malformed>,
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

    /// Cell `i` as [`CellRead::opt_text`] reads it, written into `room`
    /// (its old text dropped, its capacity kept); `false` for NULL. Text
    /// and times, nearly every cell a copy reads, need no `String` of
    /// their own.
    pub fn text_into(
        &mut self,
        i: usize,
        column: &'static str,
        room: &mut String,
    ) -> Result<bool, postgres::Error> {
        let raw = self.row.try_get::<_, Raw<'_>>(i)?;
        let Some(bytes) = raw.bytes else {
            return Ok(false);
        };
        match raw.ty {
            _ if is_text(&raw.ty) => {
                if let Ok(text) = std::str::from_utf8(bytes) {
                    room.clear();
                    room.push_str(text);
                    return Ok(true);
                }
            }
            Type::TIMESTAMPTZ => {
                if let Ok(t) = DateTime::<Utc>::from_sql(&raw.ty, bytes) {
                    room.clear();
                    push_time_text(t, room);
                    return Ok(true);
                }
            }
            _ => {}
        }
        Ok(match self.opt_text(i, column)? {
            Some(text) => {
                *room = text;
                true
            }
            None => false,
        })
    }
}

impl CellRead for Cells<'_> {
    type Error = postgres::Error;

    /// A number or a time is its text; bytes and invalid UTF-8 are made
    /// visible and flagged.
    fn opt_text(
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

    /// Digits in a text column read as the number, as SQLite's column
    /// affinity stores them; any other text is flagged.
    fn opt_int(&mut self, i: usize, column: &'static str) -> Result<Option<i64>, postgres::Error> {
        Ok(match self.value(i)? {
            Value::Null => None,
            Value::Int(n) => Some(n),
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

    /// Asked of the raw cell: decoding it would copy its text only to drop it.
    fn is_null(&mut self, i: usize) -> Result<bool, postgres::Error> {
        Ok(self.row.try_get::<_, Raw<'_>>(i)?.bytes.is_none())
    }

    fn malformed(&mut self) -> &mut Vec<Malformed> {
        &mut self.malformed
    }

    /// A boolean, or 1/0 from a service that stores it as a number as
    /// SQLite does.
    fn bool(&mut self, i: usize, column: &'static str) -> Result<bool, postgres::Error> {
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

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::{push_time_text, time_text};

    #[test]
    fn a_time_written_in_place_is_the_text_time_text_gives() {
        let times = [
            "2026-11-30T10:00:00Z",
            "2026-11-30T10:00:00.5Z",
            "2026-11-30T10:00:00.25Z",
            "2026-12-01T00:00:00.001Z",
            "2026-12-01T23:59:59.000001Z",
            "2026-12-01T23:59:59.123456Z",
            "2026-12-01T23:59:59.123456789Z",
            "2026-12-01T23:59:59.000000001Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999Z",
            "+10000-01-01T00:00:00Z",
            "-0001-06-15T12:00:00.5Z",
        ];
        for text in times {
            let t: DateTime<Utc> = text.parse().unwrap();
            let mut out = String::from("kept ");
            push_time_text(t, &mut out);
            assert_eq!(out, format!("kept {}", time_text(t)), "{text}");
        }
        // A leap second, as chrono holds it.
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .and_then(|d| d.and_hms_nano_opt(23, 59, 59, 1_500_000_000))
            .unwrap()
            .and_utc();
        let mut out = String::new();
        push_time_text(leap, &mut out);
        assert_eq!(out, time_text(leap));
    }
}
