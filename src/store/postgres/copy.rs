//! A whole ledger out of and into PostgreSQL for `settle copy`: each table
//! read in id order as neutral values (an instant as RFC 3339 text, a flag
//! as a boolean), as tolerantly as the reads take a service's types, and
//! written into an empty ledger with `COPY` in one transaction, the
//! identity sequences moved past the copied ids so the next service insert
//! does not collide. Decisions keep their stored chain hashes.

use std::io::Write;

use chrono::{DateTime, Utc};
use postgres::Row;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

use super::cells::{Cells, time_text};
use super::conn::Pg;
use crate::domain::{TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::backend::Transfer;
use crate::store::cells::CellRead;
use crate::store::copy::{
    CopyReport, Held, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty,
};
use crate::store::drills::present;

impl Transfer for Pg {
    fn copy_rows(
        &self,
        table: &Table,
        each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        let doing = format!("reading {} for the copy", table.name);
        let mut client = self.client.borrow_mut();
        let err = |e| super::error::pg_error(&self.shown, &doing, e);
        if table.console {
            let present: bool = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table.name])
                .and_then(|r| r.try_get(0))
                .map_err(err)?;
            if !present {
                return Ok(0);
            }
        }
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            table.column_list(),
            table.name,
            table.order
        );
        // A whole table streams for as long as the destination takes to
        // write it: the reads' statement timeout is for pages, not this.
        let mut tx = client.transaction().map_err(err)?;
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(err)?;
        let mut n = 0;
        {
            let mut rows = tx.query_raw(&sql, std::iter::empty::<i64>()).map_err(err)?;
            while let Some(row) = rows.next().map_err(err)? {
                each(values(&row, table).map_err(err)?)?;
                n += 1;
            }
        }
        tx.commit().map_err(err)?;
        Ok(n)
    }

    /// Each table through one `COPY … FROM STDIN` (the contracts of op
    /// types through INSERT, which may meet some already there), so a
    /// million rows cost one round trip, not a million.
    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        self.ensure_writable()?;
        let shown = self.shown.clone();
        let err = |doing: &str, e| super::error::pg_error(&shown, doing, e);
        let mut tx = self
            .client
            .get_mut()
            .transaction()
            .map_err(|e| err("starting the copy", e))?;
        let empty = "copy into a new ledger: a new file, or an empty database (`settle init`)";
        refuse_unless_empty(&shown, empty, |table| {
            tx.query_one(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), &[])
                .and_then(|r| r.try_get(0))
                .map_err(|e| err("looking whether the destination is empty", e))
        })?;
        let mut report = CopyReport::default();
        for table in &TABLES {
            let n = if table.name == "op_types" {
                insert_op_types(&mut tx, &shown, table, source)?
            } else if table.made_on_use {
                let mut held = Held::read(table, source)?;
                if held.is_empty() {
                    0
                } else {
                    if !present(&mut &mut tx).map_err(|e| err("making settle_drills", e))? {
                        tx.batch_execute(super::drills::DDL)
                            .map_err(|e| err("making settle_drills", e))?;
                    }
                    copy_in(&mut tx, &shown, table, &mut held.source())?
                }
            } else {
                copy_in(&mut tx, &shown, table, source)?
            };
            report.tables.push((table.name, n));
        }
        // Rows went in with their ids; the identities would hand out 1
        // next and collide.
        let made = |t: &Table| !t.made_on_use || report.rows(t.name) > 0;
        for table in TABLES.iter().filter(|t| t.identity && made(t)) {
            tx.execute(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{0}', 'id'), max(id))
                     FROM {0} HAVING max(id) IS NOT NULL",
                    table.name
                ),
                &[],
            )
            .map_err(|e| err("moving the ids past the copied rows", e))?;
        }
        tx.commit().map_err(|e| err("committing the copy", e))?;
        Ok(report)
    }
}

/// One table through `COPY … FROM STDIN`; returns how many rows.
fn copy_in(
    tx: &mut postgres::Transaction<'_>,
    shown: &std::path::Path,
    table: &Table,
    source: &mut RowSource,
) -> Result<u64> {
    let doing = format!("writing {}", table.name);
    let err = |e| super::error::pg_error(shown, &doing, e);
    let sql = format!("COPY {} ({}) FROM STDIN", table.name, table.column_list());
    let mut writer = tx.copy_in(&sql).map_err(err)?;
    let mut line = Vec::with_capacity(COPY_BUFFER);
    let mut row = 0u64;
    let n = source(table, &mut |values| {
        row += 1;
        copy_line(shown, table, row, values, &mut line)?;
        if line.len() >= COPY_BUFFER {
            writer
                .write_all(&line)
                .map_err(|e| copy_error(shown, &doing, e))?;
            line.clear();
        }
        Ok(())
    })?;
    writer
        .write_all(&line)
        .map_err(|e| copy_error(shown, &doing, e))?;
    writer.finish().map_err(err)?;
    Ok(n)
}

/// Bytes of COPY text gathered before each write to the server.
const COPY_BUFFER: usize = 1 << 20;

/// The contracts of op types, row by row: a destination may hold some.
fn insert_op_types(
    tx: &mut postgres::Transaction<'_>,
    shown: &std::path::Path,
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
    let err = |e| super::error::pg_error(shown, &doing, e);
    let stmt = tx.prepare(&sql).map_err(err)?;
    source(table, &mut |values| {
        let params = params(shown, table, values)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        tx.execute(&stmt, &refs).map(|_| ()).map_err(err)
    })
}

fn copy_error(shown: &std::path::Path, doing: &str, e: std::io::Error) -> Error {
    Error::ledger(
        shown,
        format!("{doing}: {e}"),
        "check the server's log; nothing was copied (the copy is one transaction)",
    )
}

/// A row of the copy as tolerantly as the reads take it: an `integer` id,
/// a time kept as text, a flag stored as 1/0 come back as values, and a
/// cell its column does not allow comes back as its text, for the
/// destination to take or refuse by name.
fn values(row: &Row, table: &Table) -> std::result::Result<Vec<Value>, postgres::Error> {
    let mut cells = Cells::new(row);
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (column, kind))| {
            if cells.is_null(i)? {
                return Ok(Value::Null);
            }
            Ok(match kind {
                Kind::Int => match cells.opt_int(i, column)? {
                    Some(n) => Value::Int(n),
                    None => cells.opt_text(i, column)?.map_or(Value::Null, Value::Text),
                },
                // A timestamptz in the form settle writes, a service's
                // fractions kept; a time stored as text, as written.
                Kind::Text | Kind::Time => {
                    cells.opt_text(i, column)?.map_or(Value::Null, Value::Text)
                }
                Kind::Bool => Value::Bool(cells.bool(i, column)?),
            })
        })
        .collect()
}

/// Appends one row in COPY's text format to `out`: tab between cells, `\N`
/// for NULL, backslash escapes for what the format reserves. A value its
/// column cannot hold is refused, naming the table, the row and the column.
fn copy_line(
    shown: &std::path::Path,
    table: &Table,
    row: u64,
    values: Vec<Value>,
    out: &mut Vec<u8>,
) -> Result<()> {
    for (i, ((column, kind), v)) in table.columns.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        let bad = |found: &str| {
            Error::ledger(
                shown,
                format!(
                    "{} row {row}: {column}: {} is not what the column holds",
                    table.name,
                    crate::text::sanitize(found)
                ),
                format!("fix the source ledger's cell ({TIME_FORMATS})"),
            )
        };
        match (kind, v) {
            (_, Value::Null) => out.extend_from_slice(b"\\N"),
            (Kind::Int, Value::Int(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Kind::Text, Value::Text(t)) => escape(&t, out),
            (Kind::Text, Value::Int(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            (Kind::Bool, Value::Bool(b)) => out.push(if b { b't' } else { b'f' }),
            (Kind::Time, Value::Text(t)) => {
                let at = parse_time(&t).ok_or_else(|| bad(&t))?;
                out.extend_from_slice(time_text(at).as_bytes());
            }
            (Kind::Time, Value::Int(n)) => {
                let at = parse_time(&n.to_string()).ok_or_else(|| bad(&n.to_string()))?;
                out.extend_from_slice(time_text(at).as_bytes());
            }
            (_, other) => return Err(bad(&format!("{other:?}"))),
        }
    }
    out.push(b'\n');
    Ok(())
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

/// Copy values as PostgreSQL parameters; a time that is not one is refused,
/// naming the table and column.
fn params(shown: &std::path::Path, table: &Table, values: Vec<Value>) -> Result<Vec<Param>> {
    table
        .columns
        .iter()
        .zip(values)
        .map(|((column, kind), v)| {
            let bad = |found: &str| {
                Error::ledger(
                    shown,
                    format!(
                        "{}.{column}: {} is not what the column holds",
                        table.name,
                        crate::text::sanitize(found)
                    ),
                    format!("fix the source ledger's cell ({TIME_FORMATS})"),
                )
            };
            Ok(match (kind, v) {
                (Kind::Int, Value::Null) => Box::new(None::<i64>) as Param,
                (Kind::Text, Value::Null) => Box::new(None::<String>),
                (Kind::Time, Value::Null) => Box::new(None::<DateTime<Utc>>),
                (Kind::Bool, Value::Null) => Box::new(None::<bool>),
                (Kind::Int, Value::Int(i)) => Box::new(i),
                (Kind::Text, Value::Text(t)) => Box::new(t),
                (Kind::Bool, Value::Bool(b)) => Box::new(b),
                (Kind::Time, Value::Text(t)) => Box::new(parse_time(&t).ok_or_else(|| bad(&t))?),
                (Kind::Time, Value::Int(i)) => {
                    Box::new(parse_time(&i.to_string()).ok_or_else(|| bad(&i.to_string()))?)
                }
                (_, other) => return Err(bad(&format!("{other:?}"))),
            })
        })
        .collect()
}
