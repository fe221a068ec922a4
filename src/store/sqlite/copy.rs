//! A whole ledger out of and into SQLite for `settle copy`: each table read
//! in id order as neutral values, and written into an empty ledger in one
//! transaction. Cells are written as they came (a service's time text stays
//! its text); decisions keep their stored chain hashes.

use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{TransactionBehavior, params_from_iter};

use super::conn::Sqlite;
use crate::error::{Error, Result};
use crate::store::backend::Transfer;
use crate::store::copy::{
    CopyReport, Held, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty,
};

impl Transfer for Sqlite {
    fn copy_rows(
        &self,
        table: &Table,
        each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        // A service's ledger that was never adopted has no console tables:
        // none of their rows.
        if table.console && !self.tables.console {
            return Ok(0);
        }
        let doing = format!("reading {} for the copy", table.name);
        // A ledger older than schema 5 (read as it is, never migrated by a
        // copy) lacks the probes and the worker's columns.
        let present: Vec<String> = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .and_then(|mut stmt| {
                stmt.query_map([table.name], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err(&doing, e))?;
        if present.is_empty() {
            return Ok(0);
        }
        let columns: Vec<String> = table
            .columns
            .iter()
            .map(
                |(name, _)| match table.added_later.iter().find(|(n, _)| n == name) {
                    Some((_, default)) if !present.iter().any(|p| p == name) => default.to_string(),
                    _ => name.to_string(),
                },
            )
            .collect();
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            columns.join(", "),
            table.name,
            table.order
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(&doing, e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(&doing, e))?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(|e| self.err(&doing, e))? {
            let mut values = Vec::with_capacity(table.columns.len());
            for (i, (column, kind)) in table.columns.iter().enumerate() {
                let cell = row.get_ref(i).map_err(|e| self.err(&doing, e))?;
                values.push(value(cell, *kind).ok_or_else(|| {
                    Error::ledger(
                        &self.path,
                        format!(
                            "{} row {}: {column} is not what the column holds",
                            table.name,
                            n + 1
                        ),
                        "fix the cell, or leave this ledger where it is: a copy never changes a value",
                    )
                })?);
            }
            each(values)?;
            n += 1;
        }
        Ok(n)
    }

    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        // A ledger that already holds operations or history is refused: the
        // copy would mix two ledgers and fork the chain.
        self.ensure_writable()?;
        let path = self.path.clone();
        let err = |doing: &str, e| super::error::sqlite(&path, doing, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the copy", e).busy_after(self.wait))?;
        let empty = "copy into a new ledger: a new file, or an empty database";
        refuse_unless_empty(&path, empty, |table| {
            tx.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| {
                r.get(0)
            })
            .map_err(|e| err("looking whether the destination is empty", e))
        })?;
        let mut report = CopyReport::default();
        for table in &TABLES {
            let mut held = None;
            if table.made_on_use {
                let rows = Held::read(table, source)?;
                if rows.is_empty() {
                    report.tables.push((table.name, 0));
                    continue;
                }
                tx.execute_batch(super::drills::DDL)
                    .map_err(|e| err(&format!("making {}", table.name), e))?;
                held = Some(rows);
            }
            // A contract already there (a ledger made by `settle init` has
            // none, but a hand-made one may) is the same receiver's.
            let sql = format!(
                "INSERT {} INTO {} ({}) VALUES ({})",
                if table.name == "op_types" {
                    "OR IGNORE"
                } else {
                    ""
                },
                table.name,
                table.column_list(),
                table.placeholders('?')
            );
            let doing = format!("writing {}", table.name);
            let mut stmt = tx.prepare(&sql).map_err(|e| err(&doing, e))?;
            let mut write = |values: Vec<Value>| {
                stmt.execute(params_from_iter(values.into_iter().map(sql_value)))
                    .map(|_| ())
                    .map_err(|e| err(&doing, e))
            };
            let n = match held.as_mut() {
                Some(rows) => rows.source()(table, &mut write)?,
                None => source(table, &mut write)?,
            };
            report.tables.push((table.name, n));
        }
        tx.commit()
            .map_err(|e| err("committing the copy", e).busy_after(self.wait))?;
        Ok(report)
    }
}

/// A SQLite cell as a copy value, or `None` when it is not what the column
/// holds (a real or a blob where settle writes text or integers, text that is not
/// UTF-8).
fn value(cell: ValueRef<'_>, kind: Kind) -> Option<Value> {
    Some(match (cell, kind) {
        (ValueRef::Null, _) => Value::Null,
        (ValueRef::Integer(i), Kind::Bool) => Value::Bool(i != 0),
        (ValueRef::Integer(i), _) => Value::Int(i),
        // Bytes that are not UTF-8 would be changed on the way: refused.
        (ValueRef::Text(t), Kind::Text | Kind::Time) => {
            Value::Text(std::str::from_utf8(t).ok()?.into())
        }
        _ => return None,
    })
}

fn sql_value(v: Value) -> Sql {
    match v {
        Value::Null => Sql::Null,
        Value::Int(i) => Sql::Integer(i),
        Value::Text(t) => Sql::Text(t),
        Value::Bool(b) => Sql::Integer(i64::from(b)),
    }
}
