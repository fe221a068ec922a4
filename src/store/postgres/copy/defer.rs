//! A new ledger's keys and indexes built after its rows, as `pg_restore`
//! orders a restore: checking a foreign key and growing every index row by
//! row made most of a copy's time, where building each once over the loaded
//! table is a sort. What is lifted is read from the catalog and put back
//! from the server's own definitions, with the same names, so the ledger
//! ends with the schema creating it made. Only for a ledger settle created
//! for the copy: its tables staged, which nobody else sees until the copy
//! moves them in ([`super::staged`]), or, for a role that may not
//! stage, locked by the copy's one transaction until it commits.

use std::path::Path;

use postgres::Transaction;

use crate::error::{Error, Result};
use crate::store::copy::{TABLES, Table};
use crate::store::postgres::error::pg_error;
use crate::text::sanitize;

/// The keys and indexes lifted off a new ledger's tables, to be built
/// again after the rows.
pub(crate) struct Deferred {
    /// For each primary key and unique constraint, its index built then
    /// made the constraint (a build takes a lock that lets the table be
    /// read meanwhile, where `ADD CONSTRAINT` locks out even reads);
    /// `CREATE INDEX …` for the other indexes. Each with its table.
    keys: Vec<(String, String)>,
    /// The foreign keys, which need the keys they reference.
    foreign: Vec<Foreign>,
}

/// A foreign key to build, and the tables it needs built first.
pub(crate) struct Foreign {
    pub table: String,
    pub references: String,
    pub sql: String,
}

/// The tables a copy streams with COPY (all but the op types' contracts,
/// which may meet some already there, and the tables made on use).
pub(crate) fn streamed(table: &Table) -> bool {
    table.name != "op_types" && !table.made_on_use
}

/// The tables whose keys a copy into a new ledger builds after the rows:
/// those it streams, and what settle derives from them.
pub(crate) fn lifted() -> Vec<&'static str> {
    TABLES
        .iter()
        .filter(|t| streamed(t))
        .map(|t| t.name)
        .chain(["settle_queue", "settle_event_ops"])
        .collect()
}

/// Every key, unique constraint and foreign key on `tables`, with its
/// table, name and definition; foreign keys last.
const CONSTRAINTS: &str = "SELECT conrelid::regclass::text, quote_ident(conname), \
         pg_get_constraintdef(oid), contype = 'f', confrelid::regclass::text, \
         CASE WHEN contype = 'f' THEN '' ELSE pg_get_indexdef(conindid) END, \
         CASE contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' ELSE '' END, \
         conindid::regclass::text \
     FROM pg_constraint \
     WHERE conrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t) \
       AND contype IN ('p', 'u', 'f') \
     ORDER BY contype = 'f', conrelid, conname";

/// Every index on `tables` that no constraint owns, with its definition.
const INDEXES: &str = "SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, \
         pg_get_indexdef(i.indexrelid) \
     FROM pg_index i \
     WHERE i.indrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t) \
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c \
                       WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x')) \
     ORDER BY 1";

impl Deferred {
    /// Drops the foreign keys, keys and other indexes of `tables`, keeping
    /// how to build each again.
    pub(crate) fn lift(
        tx: &mut Transaction<'_>,
        shown: &Path,
        tables: &[&str],
    ) -> Result<Deferred> {
        let err = |e| pg_error(shown, "setting the new ledger's keys aside for the copy", e);
        let constraints = tx.query(CONSTRAINTS, &[&tables]).map_err(err)?;
        let indexes = tx.query(INDEXES, &[&tables]).map_err(err)?;
        // A key cannot go while a foreign key references it, nor come back
        // before: foreign keys go first and come back last.
        let (mut drop_foreign, mut drop) = (Vec::new(), Vec::new());
        let (mut keys, mut foreign) = (Vec::new(), Vec::new());
        for row in &constraints {
            let (table, name, definition, is_foreign): (String, String, String, bool) = (
                row.try_get(0).map_err(err)?,
                row.try_get(1).map_err(err)?,
                row.try_get(2).map_err(err)?,
                row.try_get(3).map_err(err)?,
            );
            let lift = format!("ALTER TABLE {table} DROP CONSTRAINT {name}");
            if is_foreign {
                drop_foreign.push(lift);
                foreign.push(Foreign {
                    sql: format!("ALTER TABLE {table} ADD CONSTRAINT {name} {definition}"),
                    references: row.try_get(4).map_err(err)?,
                    table,
                });
            } else {
                let (index, kind, index_name): (String, String, String) = (
                    row.try_get(5).map_err(err)?,
                    row.try_get(6).map_err(err)?,
                    row.try_get(7).map_err(err)?,
                );
                drop.push(lift);
                keys.push((
                    table.clone(),
                    format!(
                        "{index}; ALTER TABLE {table} ADD CONSTRAINT {name} {kind} USING INDEX {index_name}"
                    ),
                ));
            }
        }
        for row in &indexes {
            let (table, name): (String, String) =
                (row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
            drop.push(format!("DROP INDEX {name}"));
            keys.push((table, row.try_get(2).map_err(err)?));
        }
        drop_foreign.append(&mut drop);
        if !drop_foreign.is_empty() {
            tx.batch_execute(&drop_foreign.join(";\n")).map_err(err)?;
        }
        Ok(Deferred { keys, foreign })
    }

    /// [`Deferred::lift`] in a transaction that loads the tables itself:
    /// they are locked against every other session until it commits.
    pub(crate) fn lift_locked(
        tx: &mut Transaction<'_>,
        shown: &Path,
        tables: &[&str],
    ) -> Result<Deferred> {
        tx.batch_execute(&format!(
            "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
            tables.join(", ")
        ))
        .map_err(|e| pg_error(shown, "setting the new ledger's keys aside for the copy", e))?;
        Deferred::lift(tx, shown, tables)
    }

    /// Builds every key and index, then every foreign key.
    pub(crate) fn build_all(self, tx: &mut Transaction<'_>, shown: &Path) -> Result<()> {
        let mut all: Vec<String> = self.keys.into_iter().map(|(_, sql)| sql).collect();
        all.extend(self.foreign.into_iter().map(|f| f.sql));
        build(tx, shown, &all)
    }

    /// The keys and indexes of `table` to build once its rows are in,
    /// taken out of what is left to build.
    pub(crate) fn take(&mut self, table: &str) -> Vec<String> {
        let (mine, others) = std::mem::take(&mut self.keys)
            .into_iter()
            .partition(|(t, _)| t == table);
        self.keys = others;
        mine.into_iter().map(|(_, sql)| sql).collect()
    }

    /// The foreign keys, to build once the keys they reference are there,
    /// taken out of what is left to build.
    pub(crate) fn take_foreign(&mut self) -> Vec<Foreign> {
        std::mem::take(&mut self.foreign)
    }
}

/// Builds `statements` (keys, indexes, foreign keys) over loaded rows; a
/// foreign key checks every row at once. The sorts get more memory than a
/// session's default, for this transaction only.
pub(crate) fn build(tx: &mut Transaction<'_>, shown: &Path, statements: &[String]) -> Result<()> {
    let err = |e| pg_error(shown, "building the new ledger's keys and indexes", e);
    tx.batch_execute("SET LOCAL maintenance_work_mem = '256MB'")
        .map_err(err)?;
    for sql in statements {
        tx.batch_execute(sql)
            .map_err(|e| unmet(shown, e).unwrap_or_else(&err))?;
    }
    Ok(())
}

/// A key or a reference the copied rows break (a source whose attempts
/// name an operation it does not hold, two operations with one key), said
/// with the row the server names; the database error itself otherwise.
fn unmet(shown: &Path, e: postgres::Error) -> std::result::Result<Error, postgres::Error> {
    let Some(db) = e.as_db_error() else {
        return Err(e);
    };
    if !matches!(db.code().code(), "23503" | "23505") {
        return Err(e);
    }
    let detail = db.detail().map(|d| format!(": {d}")).unwrap_or_default();
    Ok(Error::ledger(
        shown,
        sanitize(&format!(
            "the source's rows break the ledger's rules: {}{detail}",
            db.message()
        )),
        "mend those rows in the source; nothing was copied (a ledger takes a copy whole or not at all), \
         so copy again once they are mended",
    ))
}
