//! A whole ledger out of and into PostgreSQL for `settle copy`: each table
//! read in id order as neutral values (an instant as RFC 3339 text, a flag
//! as a boolean), written into an empty ledger in one transaction, and the
//! identity sequences moved past the copied ids so the next service insert
//! does not collide. Decisions keep their stored chain hashes.

use chrono::{DateTime, SecondsFormat, Utc};
use postgres::Row;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

use super::conn::Pg;
use crate::domain::{TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::backend::Transfer;
use crate::store::copy::{CopyReport, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty};

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
        let mut rows = client
            .query_raw(&sql, std::iter::empty::<i64>())
            .map_err(err)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(err)? {
            each(values(&row, table).map_err(err)?)?;
            n += 1;
        }
        Ok(n)
    }

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
            let sql = format!(
                "INSERT INTO {} ({}) VALUES ({}){}",
                table.name,
                table.column_list(),
                table.placeholders('$'),
                if table.name == "op_types" {
                    " ON CONFLICT (op_type) DO NOTHING"
                } else {
                    ""
                }
            );
            let doing = format!("writing {}", table.name);
            let stmt = tx.prepare(&sql).map_err(|e| err(&doing, e))?;
            let n = source(table, &mut |values| {
                let params = params(&shown, table, values)?;
                let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
                tx.execute(&stmt, &refs)
                    .map(|_| ())
                    .map_err(|e| err(&doing, e))
            })?;
            report.tables.push((table.name, n));
        }
        // Rows went in with their ids; the identities would hand out 1
        // next and collide.
        for table in TABLES.iter().filter(|t| t.identity) {
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

/// A row as copy values, by the table's column kinds.
fn values(row: &Row, table: &Table) -> std::result::Result<Vec<Value>, postgres::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, kind))| {
            Ok(match kind {
                Kind::Int => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
                Kind::Text => row.try_get::<_, Option<String>>(i)?.map(Value::Text),
                // Whole seconds as settle writes them (`format_time`), a
                // service's fractions kept.
                Kind::Time => row
                    .try_get::<_, Option<DateTime<Utc>>>(i)?
                    .map(|t| Value::Text(t.to_rfc3339_opts(SecondsFormat::AutoSi, true))),
                Kind::Bool => row.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
            }
            .unwrap_or(Value::Null))
        })
        .collect()
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
