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
        // Each row is read into the last one's cells: a text is written
        // into the room the same column's text left, not allocated again.
        let mut values = vec![Value::Null; table.columns.len()];
        while let Some(row) = rows.next().map_err(|e| self.err(&doing, e))? {
            for (i, ((column, kind), slot)) in table.columns.iter().zip(&mut values).enumerate() {
                let cell = row.get_ref(i).map_err(|e| self.err(&doing, e))?;
                if !fill(cell, *kind, slot) {
                    return Err(Error::ledger(
                        &self.path,
                        format!(
                            "{} row {}: {column} is not what the column holds",
                            table.name,
                            n + 1
                        ),
                        "fix the cell, or leave this ledger where it is: a copy never changes a value",
                    ));
                }
            }
            each(&values)?;
            n += 1;
        }
        Ok(n)
    }

    /// Into a file created for this copy, settle's indexes and the key of
    /// `operations` are built after the rows, and the rows go to the file
    /// through a rollback journal rather than the WAL; into one that was
    /// there already, the indexes stay, as a service may be using it.
    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        // A ledger that already holds operations or history is refused: the
        // copy would mix two ledgers and fork the chain.
        let path = self.path.clone();
        let fresh = self.created_here;
        let err = |doing: &str, e| super::error::sqlite(&path, doing, e);
        let (mut left_wal, mut model_closed) = (false, false);
        if fresh {
            // The read model's own connection holds the ledger open, and
            // SQLite leaves WAL mode only when no other connection does:
            // it is closed for the load, and dropped after it, whatever
            // became of the load. The empty file's model would catch a
            // copy up row by row on its first read; the next open builds
            // it in bulk, as for an adoption.
            model_closed = self.model.get_mut().take().is_some();
            // A load of 10M operations through the WAL looked its spilled
            // pages up in a 6 GB log ([`super::journal`]).
            left_wal = match super::journal::leave_wal(&self.conn) {
                Ok(left) => left,
                Err(e) => {
                    self.after_load(false, model_closed)?;
                    return Err(err("starting the copy", e));
                }
            };
        }
        let copied =
            load(&mut self.conn, &path, fresh, source).map_err(|e| e.busy_after(self.wait));
        // The journal and the read model go back to what they
        // were whatever became of the copy; the copy's own error first.
        let restored = self.after_load(left_wal, model_closed);
        let report = copied?;
        restored?;
        // It holds rows now, which someone may be reading.
        self.created_here = false;
        Ok(report)
    }
}

impl Sqlite {
    /// Puts back the WAL a load left (`left_wal`), and drops the read
    /// model it closed: the ledger's connection detaches it, and the next
    /// open builds it.
    fn after_load(&mut self, left_wal: bool, model_closed: bool) -> Result<()> {
        let err = |e| super::error::sqlite(&self.path, "finishing the copy", e);
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
/// settle's indexes on the loaded tables and the key of `operations` are
/// taken off first and built again after the rows, so the file ends as
/// creating it made it. The load keeps SQLite's default page cache: with
/// nothing but appends to write, a larger one made it no faster, and the
/// sorts' runs are the cache's size, where larger runs cost more than the
/// merges they save.
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
    let (lifted, unkeyed) = if fresh {
        let setting_aside = |e| err("setting the new ledger's indexes aside", e);
        (
            lift_indexes(&tx).map_err(setting_aside)?,
            unkey(&tx).map_err(setting_aside)?,
        )
    } else {
        (Vec::new(), None)
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
            tx.execute_batch(&super::drills::ddl())
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
        let mut write = |values: &[Value]| {
            for (i, v) in values.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, sql_value(v))
                    .map_err(|e| err(&doing, e))?;
            }
            stmt.raw_execute().map_err(|e| err(&doing, e))?;
            Ok(())
        };
        let n = match held.as_mut() {
            Some(rows) => rows.source()(table, &mut write)?,
            None => source(table, &mut write)?,
        };
        report.tables.push((table.name, n));
    }
    if let Some(table_sql) = unkeyed {
        rekey(&tx, &table_sql, path)?;
    }
    tx.execute_batch(&lifted.join(";\n"))
        .map_err(|e| err("building the new ledger's indexes", e))?;
    tx.commit().map_err(|e| err("committing the copy", e))?;
    Ok(report)
}

/// ledger-v1's key of `operations`, the last line of the table a new
/// file holds ([`super::schema::SERVICE_TABLES`]).
pub(super) const OPERATIONS_KEY: &str = ",\n    UNIQUE (account, op_type, idem_key)";

/// SQLite's name for the index of a table's first `UNIQUE`.
const OPERATIONS_KEY_INDEX: &str = "sqlite_autoindex_operations_1";

/// Takes the key off a new file's empty `operations` for the load: the
/// table is made again without it, and [`rekey`] sorts it once after the
/// rows. The rows come in id order, the key's entries in the accounts',
/// so one sort after the rows is cheaper than keeping the key as they
/// come (docs/benchmarks.md, *Behind the code*). Returns the table's
/// text, or None where it is not the one settle writes: the key then stays
/// through the load.
fn unkey(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<Option<String>> {
    let table: String = tx.query_row(
        "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = 'operations'",
        [],
        |r| r.get(0),
    )?;
    let unkeyed = table.replacen(OPERATIONS_KEY, "", 1);
    if unkeyed == table {
        return Ok(None);
    }
    tx.execute_batch(&format!("DROP TABLE main.operations; {unkeyed};"))?;
    Ok(Some(table))
}

/// Builds the key [`unkey`] took off, by one sort of the loaded rows, and
/// makes it the table's own again: `table_sql` back as the table's text,
/// and the index named and kept as SQLite keeps the index of a `UNIQUE`
/// it declares (no text of its own). The index holds the same entries
/// either way; the schema then reads as a new file's, and `PRAGMA
/// index_list` says the key is the table's (`u`). SQLite's
/// `writable_schema`, on a file this copy created, inside its
/// transaction: anything amiss rolls the whole copy back.
fn rekey(tx: &rusqlite::Transaction<'_>, table_sql: &str, path: &std::path::Path) -> Result<()> {
    let err = |e| super::error::sqlite(path, "building the key of operations", e);
    if let Err(e) = tx.execute_batch(
        "CREATE UNIQUE INDEX main.settle_copy_key ON operations (account, op_type, idem_key)",
    ) {
        return Err(duplicate_key(tx, path).unwrap_or_else(|| err(e)));
    }
    let version: i64 = tx
        .query_row("PRAGMA main.schema_version", [], |r| r.get(0))
        .map_err(err)?;
    tx.execute_batch("PRAGMA main.writable_schema = ON")
        .map_err(err)?;
    let renamed = tx
        .execute(
            "UPDATE main.sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'operations'",
            [table_sql],
        )
        .and_then(|_| {
            tx.execute(
                "UPDATE main.sqlite_schema SET name = ?1, sql = NULL
                 WHERE type = 'index' AND name = 'settle_copy_key'",
                [OPERATIONS_KEY_INDEX],
            )
        })
        .and_then(|_| tx.execute_batch(&format!("PRAGMA main.schema_version = {}", version + 1)));
    let off = tx.execute_batch("PRAGMA main.writable_schema = OFF");
    renamed.and(off).map_err(err)?;
    let keyed: bool = tx
        .query_row(
            "SELECT count(*) = 1 FROM pragma_index_list('operations')
             WHERE name = ?1 AND origin = 'u' AND \"unique\"",
            [OPERATIONS_KEY_INDEX],
            |r| r.get(0),
        )
        .map_err(err)?;
    if keyed {
        Ok(())
    } else {
        Err(Error::ledger(
            path,
            "the copy's operations did not get back their unique key",
            format!(
                "nothing was written; report this, with the SQLite version settle was built with ({})",
                rusqlite::version()
            ),
        ))
    }
}

/// The first key two copied operations share, as the error a copy ends
/// with: ledger-v1 gives each (account, op_type, idem_key) one operation.
fn duplicate_key(tx: &rusqlite::Transaction<'_>, path: &std::path::Path) -> Option<Error> {
    let (account, op_type, key, n): (String, String, String, i64) = tx
        .query_row(
            "SELECT account, op_type, idem_key, count(*) FROM main.operations
             GROUP BY account, op_type, idem_key HAVING count(*) > 1 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .ok()?;
    Some(Error::ledger(
        path,
        format!(
            "operations: {n} operations share account '{}', op_type '{}' and idem_key '{}', \
             which ledger-v1 keys one operation by",
            crate::text::sanitize(&account),
            crate::text::sanitize(&op_type),
            crate::text::sanitize(&key)
        ),
        "nothing was written; settle the duplicates in the source ledger, then copy again",
    ))
}

/// Drops settle's indexes on the tables a copy loads (the keys a table
/// declares stay, but for the key of `operations`: [`unkey`]), returning
/// the statements that build them again.
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

/// A SQLite cell as a copy value, into `slot` (a text into the room of
/// the text it held); false when it is not what the column holds (a real
/// or a blob where settle writes text or integers, text that is not
/// UTF-8).
fn fill(cell: ValueRef<'_>, kind: Kind, slot: &mut Value) -> bool {
    *slot = match (cell, kind) {
        (ValueRef::Null, _) => Value::Null,
        (ValueRef::Integer(i), Kind::Bool) => Value::Bool(i != 0),
        (ValueRef::Integer(i), _) => Value::Int(i),
        // Bytes that are not UTF-8 would be changed on the way: refused.
        (ValueRef::Text(t), Kind::Text | Kind::Time) => {
            let Ok(text) = std::str::from_utf8(t) else {
                return false;
            };
            if let Value::Text(room) = slot {
                room.clear();
                room.push_str(text);
                return true;
            }
            Value::Text(text.to_string())
        }
        _ => return false,
    };
    true
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
