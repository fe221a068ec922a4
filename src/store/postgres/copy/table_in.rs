//! One table of a copy into PostgreSQL: every value checked against its
//! column first, so a bad one is refused by table, row and column before
//! the server sees it, then streamed through one `COPY … FROM STDIN`. The
//! binary format goes to columns of settle's own types (the server then
//! parses no text: a time costs it eight bytes, not a parse of its text,
//! which made most of the server's work); the text format goes to a
//! service's own choice of types (an `integer` id, a time kept as text),
//! which the server converts as it would any client's text. Op types'
//! contracts go through INSERT, since a destination may hold some.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use postgres::types::ToSql;
use postgres::{GenericClient, Transaction};

use crate::domain::{TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::copy::{Kind, RowSource, Table, Value};
use crate::store::postgres::cells::time_text;

/// A value checked against its column, in the type the column holds; its
/// text lent by the row it came from.
enum Cell<'a> {
    Null,
    Int(i64),
    Text(Cow<'a, str>),
    Bool(bool),
    Time(DateTime<Utc>),
}

/// `value` as its column of `kind` holds it; what was found when it cannot
/// be (text where a number is due, a time that is not one).
fn cell(kind: Kind, value: &Value) -> std::result::Result<Cell<'_>, String> {
    Ok(match (kind, value) {
        (_, Value::Null) => Cell::Null,
        (Kind::Int, Value::Int(n)) => Cell::Int(*n),
        (Kind::Text, Value::Text(t)) => Cell::Text(Cow::Borrowed(t)),
        (Kind::Text, Value::Int(n)) => Cell::Text(Cow::Owned(n.to_string())),
        (Kind::Bool, Value::Bool(b)) => Cell::Bool(*b),
        (Kind::Time, Value::Text(t)) => Cell::Time(parse_time(t).ok_or_else(|| t.clone())?),
        (Kind::Time, Value::Int(n)) => {
            let t = n.to_string();
            Cell::Time(parse_time(&t).ok_or(t)?)
        }
        (_, Value::Text(t)) => return Err(t.clone()),
        (_, Value::Int(n)) => return Err(n.to_string()),
        (_, Value::Bool(b)) => return Err(b.to_string()),
    })
}

/// A row's cells, or the error naming the first that its column cannot hold.
fn cells<'a>(shown: &Path, table: &Table, row: u64, values: &'a [Value]) -> Result<Vec<Cell<'a>>> {
    table
        .columns
        .iter()
        .zip(values)
        .map(|(&(column, kind), v)| checked(shown, table, row, (column, kind), v))
        .collect()
}

/// One cell as its column holds it, or the error naming it.
fn checked<'a>(
    shown: &Path,
    table: &Table,
    row: u64,
    (column, kind): (&str, Kind),
    value: &'a Value,
) -> Result<Cell<'a>> {
    cell(kind, value).map_err(|found| {
        Error::ledger(
            shown,
            format!(
                "{} row {row}: {column}: {} is not what the column holds",
                table.name,
                crate::text::sanitize(&found)
            ),
            format!(
                "fix the source ledger's cell ({TIME_FORMATS}); nothing was copied \
                 (a ledger takes a copy whole or not at all), so copy again once it is fixed"
            ),
        )
    })
}

/// The two forms of `COPY` data.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Binary,
    Text,
}

/// Binary when every column of `table` in the destination is of settle's
/// own type for it; text otherwise.
fn format_of(
    db: &mut impl GenericClient,
    table: &Table,
) -> std::result::Result<Format, postgres::Error> {
    let rows = db.query(
        "SELECT attname::text, atttypid::regtype::text FROM pg_attribute \
         WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
        &[&table.name],
    )?;
    let mut types = Vec::with_capacity(rows.len());
    for row in &rows {
        types.push((row.try_get::<_, String>(0)?, row.try_get::<_, String>(1)?));
    }
    let own = |&(column, kind): &(&str, Kind)| {
        let native = match kind {
            Kind::Int => "bigint",
            Kind::Text => "text",
            Kind::Time => "timestamp with time zone",
            Kind::Bool => "boolean",
        };
        types.iter().any(|(c, t)| c == column && t == native)
    };
    Ok(if table.columns.iter().all(own) {
        Format::Binary
    } else {
        Format::Text
    })
}

/// Bytes of COPY data gathered before each write to the server.
const COPY_BUFFER: usize = 1 << 20;

/// One table's rows as COPY data, checked and encoded a row at a time into
/// a buffer that is handed on whenever it is full: the statement that takes
/// it, the rows so far, the bytes.
pub(crate) struct Encoder<'a> {
    pub shown: &'a Path,
    pub table: &'a Table,
    format: Format,
    /// `COPY … FROM STDIN` in the format the destination's columns take.
    pub sql: String,
    rows: u64,
    out: Vec<u8>,
}

impl<'a> Encoder<'a> {
    /// For `table` as the destination `db` holds it (binary for settle's
    /// own types, text for a service's).
    pub(crate) fn new(
        db: &mut impl GenericClient,
        shown: &'a Path,
        table: &'a Table,
    ) -> Result<Encoder<'a>> {
        let format = format_of(db, table).map_err(|e| {
            crate::store::postgres::error::pg_error(shown, &format!("writing {}", table.name), e)
        })?;
        let sql = format!(
            "COPY {} ({}) FROM STDIN{}",
            table.name,
            table.column_list(),
            if format == Format::Binary {
                " (FORMAT binary)"
            } else {
                ""
            }
        );
        let mut out = Vec::with_capacity(COPY_BUFFER + (COPY_BUFFER >> 2));
        if format == Format::Binary {
            // The signature, no flags, no header extension.
            out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
            out.extend_from_slice(&[0; 8]);
        }
        Ok(Encoder {
            shown,
            table,
            format,
            sql,
            rows: 0,
            out,
        })
    }

    /// Appends one row, or says which cell its column cannot hold; the
    /// bytes gathered, once there are enough to send.
    pub(crate) fn push(&mut self, values: &[Value]) -> Result<Option<Vec<u8>>> {
        self.rows += 1;
        // A row refused half-way leaves none of its bytes behind.
        let start = self.out.len();
        let written = self.encode(values);
        if written.is_err() {
            self.out.truncate(start);
        }
        written?;
        if self.out.len() < COPY_BUFFER {
            return Ok(None);
        }
        let room = Vec::with_capacity(self.out.capacity());
        Ok(Some(std::mem::replace(&mut self.out, room)))
    }

    /// Appends the row cell by cell, each checked against its column as it
    /// goes: no row of cells is gathered first.
    fn encode(&mut self, values: &[Value]) -> Result<()> {
        let (shown, table, row) = (self.shown, self.table, self.rows);
        let out = &mut self.out;
        if self.format == Format::Binary {
            // A table has a handful of columns: the count always fits.
            out.extend_from_slice(&(table.columns.len() as i16).to_be_bytes());
        }
        for (i, (&column, v)) in table.columns.iter().zip(values).enumerate() {
            let c = checked(shown, table, row, column, v)?;
            match self.format {
                Format::Binary => binary_cell(shown, table, row, &c, out)?,
                Format::Text => {
                    if i > 0 {
                        out.push(b'\t');
                    }
                    text_cell(&c, out);
                }
            }
        }
        if self.format == Format::Text {
            out.push(b'\n');
        }
        Ok(())
    }

    /// The last bytes, with the binary format's trailer: the encoder is
    /// done with.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        if self.format == Format::Binary {
            self.out.extend_from_slice(&(-1i16).to_be_bytes());
        }
        std::mem::take(&mut self.out)
    }
}

/// One table through `COPY … FROM STDIN`; returns how many rows.
pub(crate) fn copy_in(
    tx: &mut Transaction<'_>,
    shown: &Path,
    table: &Table,
    source: &mut RowSource,
) -> Result<u64> {
    let doing = format!("writing {}", table.name);
    let mut encoder = Encoder::new(tx, shown, table)?;
    let mut writer = tx
        .copy_in(&encoder.sql)
        .map_err(|e| crate::store::postgres::error::pg_error(shown, &doing, e))?;
    let n = source(table, &mut |values| {
        if let Some(full) = encoder.push(values)? {
            writer
                .write_all(&full)
                .map_err(|e| copy_error(shown, &doing, e))?;
        }
        Ok(())
    })?;
    writer
        .write_all(&encoder.finish())
        .map_err(|e| copy_error(shown, &doing, e))?;
    writer
        .finish()
        .map_err(|e| crate::store::postgres::error::pg_error(shown, &doing, e))?;
    Ok(n)
}

pub(crate) fn copy_error(shown: &Path, doing: &str, e: std::io::Error) -> Error {
    Error::ledger(
        shown,
        format!("{doing}: {e}"),
        "check the server's log; nothing was copied (a ledger takes a copy whole or not at all)",
    )
}

/// Microseconds from 1970 to 2000, PostgreSQL's epoch for times.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// A time as PostgreSQL holds it: microseconds since 2000, rounded as the
/// server rounds the fraction of a time given as text.
fn pg_micros(t: DateTime<Utc>) -> i64 {
    let nanos = i64::from(t.timestamp_subsec_nanos());
    let micros = t.timestamp() * 1_000_000 + nanos / 1000 + i64::from(nanos % 1000 >= 500);
    micros - PG_EPOCH_MICROS
}

/// Appends one cell in COPY's binary format (a row is the number of its
/// cells, then each): its length (-1 for NULL) and its bytes in network
/// order.
fn binary_cell(shown: &Path, table: &Table, row: u64, c: &Cell, out: &mut Vec<u8>) -> Result<()> {
    match c {
        Cell::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Cell::Int(n) => {
            out.extend_from_slice(&8i32.to_be_bytes());
            out.extend_from_slice(&n.to_be_bytes());
        }
        Cell::Bool(b) => {
            out.extend_from_slice(&1i32.to_be_bytes());
            out.push(u8::from(*b));
        }
        Cell::Time(t) => {
            out.extend_from_slice(&8i32.to_be_bytes());
            out.extend_from_slice(&pg_micros(*t).to_be_bytes());
        }
        Cell::Text(t) => {
            let len = i32::try_from(t.len()).map_err(|_| {
                Error::ledger(
                    shown,
                    format!("{} row {row}: a cell of {} bytes", table.name, t.len()),
                    "PostgreSQL takes at most 1 GB a cell: shorten it in the source",
                )
            })?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(t.as_bytes());
        }
    }
    Ok(())
}

/// Appends one cell in COPY's text format (a row is its cells with a tab
/// between them): `\N` for NULL, backslash escapes for what the format
/// reserves.
fn text_cell(c: &Cell, out: &mut Vec<u8>) {
    match c {
        Cell::Null => out.extend_from_slice(b"\\N"),
        Cell::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Cell::Bool(b) => out.push(if *b { b't' } else { b'f' }),
        Cell::Time(t) => out.extend_from_slice(time_text(*t).as_bytes()),
        Cell::Text(t) => escape(t, out),
    }
}

/// Text in COPY's text format.
fn escape(text: &str, out: &mut Vec<u8>) {
    for &b in text.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}

type Param = Box<dyn ToSql + Sync>;

/// The contracts of op types, row by row: a destination may hold some.
pub(crate) fn insert_op_types(
    tx: &mut Transaction<'_>,
    shown: &Path,
    table: &Table,
    source: &mut RowSource,
) -> Result<u64> {
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT (op_type) DO NOTHING",
        table.name,
        table.column_list(),
        table.placeholders('$'),
    );
    let doing = format!("writing {}", table.name);
    let err = |e| crate::store::postgres::error::pg_error(shown, &doing, e);
    let stmt = tx.prepare(&sql).map_err(err)?;
    let mut row = 0u64;
    source(table, &mut |values| {
        row += 1;
        let params: Vec<Param> = table
            .columns
            .iter()
            .zip(cells(shown, table, row, values)?)
            .map(|(&(_, kind), c)| param(kind, c))
            .collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        tx.execute(&stmt, &refs).map(|_| ()).map_err(err)
    })
}

/// A cell as a parameter; NULL in its column's type.
fn param(kind: Kind, c: Cell) -> Param {
    match c {
        Cell::Null => match kind {
            Kind::Int => Box::new(None::<i64>),
            Kind::Text => Box::new(None::<String>),
            Kind::Time => Box::new(None::<DateTime<Utc>>),
            Kind::Bool => Box::new(None::<bool>),
        },
        Cell::Int(n) => Box::new(n),
        Cell::Text(t) => Box::new(t.into_owned()),
        Cell::Bool(b) => Box::new(b),
        Cell::Time(t) => Box::new(t),
    }
}
