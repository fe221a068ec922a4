//! A whole ledger out of and into SQLite for `settle copy`: each table read
//! in id order as neutral values, and written into an empty ledger in one
//! transaction. Cells are written as they came (a service's time text stays
//! its text); decisions keep their stored chain hashes.

use rusqlite::TransactionBehavior;
use rusqlite::types::{ToSqlOutput, ValueRef};

use super::conn::Sqlite;
use crate::error::{Error, Result};
use crate::store::backend::Transfer;
use crate::store::copy::{
    CopyReport, EachRow, Held, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty,
};

impl Transfer for Sqlite {
    fn copy_rows(&self, table: &Table, each: &mut EachRow) -> Result<u64> {
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
        let mut values = Vec::with_capacity(table.columns.len());
        while let Some(row) = rows.next().map_err(|e| self.err(&doing, e))? {
            values.clear();
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
            each(&values)?;
            n += 1;
        }
        Ok(n)
    }

    /// Into a file created for this copy, settle's indexes are built after
    /// the rows, the rows go to the file through a rollback journal rather
    /// than the WAL, and the load gets a page cache that holds the keys it
    /// grows; into one that was there already, the indexes stay, as a
    /// service may be using it.
    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        // A ledger that already holds operations or history is refused: the
        // copy would mix two ledgers and fork the chain.
        self.ensure_writable()?;
        let path = self.path.clone();
        let fresh = self.created_here;
        let err = |doing: &str, e| super::error::sqlite(&path, doing, e);
        let cache: i64 = self
            .conn
            .query_row("PRAGMA main.cache_size", [], |r| r.get(0))
            .map_err(|e| err("starting the copy", e))?;
        let (mut left_wal, mut model_closed) = (false, false);
        if fresh {
            self.conn
                .pragma_update(Some("main"), "cache_size", -LOAD_CACHE_KIB)
                .map_err(|e| err("starting the copy", e))?;
            // The read model's own connection holds the ledger open, and
            // SQLite leaves WAL mode only when no other connection does:
            // it is closed for the load, and dropped after it, whatever
            // became of the load. The empty file's model would catch a
            // copy up row by row on its first read (100k operations:
            // 6.4 s); the next open builds it in bulk, as for an adoption.
            model_closed = self.model.take().is_some();
            // A load of 10M operations through the WAL looked its spilled
            // pages up in a 6 GB log ([`super::journal`]).
            left_wal = match super::journal::leave_wal(&self.conn) {
                Ok(left) => left,
                Err(e) => {
                    self.after_load(cache, false, model_closed)?;
                    return Err(err("starting the copy", e));
                }
            };
        }
        let copied =
            load(&mut self.conn, &path, fresh, source).map_err(|e| e.busy_after(self.wait));
        // The cache, the journal and the read model go back to what they
        // were whatever became of the copy; the copy's own error first.
        let restored = self.after_load(cache, left_wal, model_closed);
        let report = copied?;
        restored?;
        // It holds rows now, which someone may be reading.
        self.created_here = false;
        Ok(report)
    }
}

/// The page cache of a new file's load, in KiB: the unique key of
/// `operations` grows in its keys' order, not the rows', and a cache that
/// holds it keeps each page written once. Measured at 1M operations, SQLite
/// spent 17 s of CPU with its default 2 MB, 9 s with 64 MB and 13 s with
/// 256 MB, whose pages spilled no less and cost more to manage.
const LOAD_CACHE_KIB: i64 = 64 * 1024;

/// The cache once `operations` rows are in: the key grows by about 44 MiB
/// a million operations, and one outgrown by its cache spills its pages
/// and reads them back. Measured while the load still went through the
/// WAL, where each such read was slower as the WAL grew: at 10M a copy
/// from PostgreSQL took 192 s with 64 MiB, 152 s with 256 MiB and 155 s
/// growing to 512 MiB; at 1M, 256 MiB from the start cost 5 % more.
pub(super) fn load_cache_kib(operations: u64) -> i64 {
    let millions = i64::try_from(operations / 1_000_000).unwrap_or(i64::MAX);
    LOAD_CACHE_KIB
        .saturating_mul(millions)
        .clamp(LOAD_CACHE_KIB, MAX_LOAD_CACHE_KIB)
}

/// At most 256 MiB: more did not shorten a copy of 10M (512 MiB while the
/// load went through the WAL; 1 GiB through the rollback journal, 180.8 s
/// against 174.3 s for the whole command from PostgreSQL).
const MAX_LOAD_CACHE_KIB: i64 = 256 * 1024;

impl Sqlite {
    /// Puts back the page cache and the WAL a load left (`left_wal`), and
    /// drops the read model it closed: the ledger's connection detaches
    /// it, and the next open builds it.
    fn after_load(&mut self, cache: i64, left_wal: bool, model_closed: bool) -> Result<()> {
        let err = |e| super::error::sqlite(&self.path, "finishing the copy", e);
        self.conn
            .pragma_update(Some("main"), "cache_size", cache)
            .map_err(err)?;
        if left_wal {
            super::open::configure_writer(&self.conn, &self.path, self.wait)?;
        }
        if model_closed {
            self.conn.execute_batch("DETACH DATABASE rm").map_err(err)?;
            super::model::discard(&self.path);
        }
        Ok(())
    }
}

/// Every table of `source` into `conn` in one transaction; with `fresh`,
/// settle's indexes on the loaded tables are dropped first and built again
/// after the rows, from their own text, so the file ends as creating it
/// made it.
fn load(
    conn: &mut rusqlite::Connection,
    path: &std::path::Path,
    fresh: bool,
    source: &mut RowSource,
) -> Result<CopyReport> {
    let err = |doing: &str, e| super::error::sqlite(path, doing, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| err("starting the copy", e))?;
    let empty = "copy into a new ledger: a new file, or an empty database";
    refuse_unless_empty(path, empty, |table| {
        tx.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| {
            r.get(0)
        })
        .map_err(|e| err("looking whether the destination is empty", e))
    })?;
    let lifted = if fresh {
        lift_indexes(&tx).map_err(|e| err("setting the new ledger's indexes aside", e))?
    } else {
        Vec::new()
    };
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
        let grows = fresh && table.name == "operations";
        let mut written = 0u64;
        let mut write = |values: &[Value]| {
            for (i, v) in values.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, sql_value(v))
                    .map_err(|e| err(&doing, e))?;
            }
            stmt.raw_execute().map_err(|e| err(&doing, e))?;
            written += 1;
            if grows && written.is_multiple_of(1_000_000) {
                tx.pragma_update(Some("main"), "cache_size", -load_cache_kib(written))
                    .map_err(|e| err(&doing, e))?;
            }
            Ok(())
        };
        let n = match held.as_mut() {
            Some(rows) => rows.source()(table, &mut write)?,
            None => source(table, &mut write)?,
        };
        report.tables.push((table.name, n));
    }
    tx.execute_batch(&lifted.join(";\n"))
        .map_err(|e| err("building the new ledger's indexes", e))?;
    tx.commit().map_err(|e| err("committing the copy", e))?;
    Ok(report)
}

/// Drops settle's indexes on the tables a copy loads (the keys a table
/// declares stay: SQLite builds them with the table), returning the
/// statements that build them again.
fn lift_indexes(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<Vec<String>> {
    let loaded: Vec<String> = TABLES
        .iter()
        .filter(|t| !t.made_on_use)
        .map(|t| format!("'{}'", t.name))
        .collect();
    let indexes: Vec<(String, String)> = tx
        .prepare(&format!(
            "SELECT name, sql FROM main.sqlite_master \
             WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ({}) ORDER BY name",
            loaded.join(", ")
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, _) in &indexes {
        tx.execute_batch(&format!("DROP INDEX main.\"{name}\""))?;
    }
    Ok(indexes.into_iter().map(|(_, sql)| sql).collect())
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

/// A copy value as SQLite binds it, its text lent (SQLite copies it).
fn sql_value(v: &Value) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match v {
        Value::Null => ValueRef::Null,
        Value::Int(i) => ValueRef::Integer(*i),
        Value::Text(t) => ValueRef::Text(t.as_bytes()),
        Value::Bool(b) => ValueRef::Integer(i64::from(*b)),
    })
}
