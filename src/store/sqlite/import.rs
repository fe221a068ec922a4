//! SQLite's side of [`crate::store::import`]: the rows bound as a service
//! writes them (times as their text), in one immediate transaction.

use std::path::Path;

use rusqlite::{Transaction, TransactionBehavior, params};

use super::conn::Sqlite;
use crate::domain::{NewAttempt, NewEvent, NewOperation, OpTypeContract};
use crate::error::{Error, Result};
use crate::store::backend::Import;
use crate::store::import::{ImportSql, Importer, import};
use crate::store::import_report::ImportReport;

use super::reads::UNDERIVED;

/// In one transaction; see [`crate::store::import`].
impl Import for Sqlite {
    fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| failed(&path, e))?;
        let batch = Batch {
            tx,
            sql: ImportSql::new(&UNDERIVED),
            path: &path,
        };
        import(batch, operations, contracts)
    }
}

/// The import's transaction, each statement prepared once and cached.
struct Batch<'a> {
    tx: Transaction<'a>,
    sql: ImportSql,
    path: &'a Path,
}

impl Importer for Batch<'_> {
    fn contract(&mut self, c: &OpTypeContract) -> Result<()> {
        let args = params![c.op_type, c.idempotent, c.key_retention_s, c.description];
        self.execute(&self.sql.contract, args).map(|_| ())
    }

    fn operation(&mut self, op: &NewOperation) -> Result<Option<i64>> {
        let args = params![
            op.account,
            op.op_type,
            op.idem_key,
            op.fingerprint,
            op.params,
            op.state.as_str(),
            op.result_id,
            op.max_attempts,
            op.deadline_at,
            op.lease_expires_at,
            op.key_expires_at,
            op.created_at,
            op.updated_at,
        ];
        let inserted = self.execute(&self.sql.operation, args)?;
        Ok((inserted > 0).then(|| self.tx.last_insert_rowid()))
    }

    fn attempt(&mut self, op_id: i64, _: &NewOperation, a: &NewAttempt) -> Result<()> {
        let args = params![
            op_id,
            a.attempt,
            a.started_at,
            a.ended_at,
            a.outcome.as_str(),
            a.error,
            a.response,
        ];
        self.execute(&self.sql.attempt, args).map(|_| ())
    }

    fn event(&mut self, op_id: i64, _: &NewOperation, e: &NewEvent) -> Result<()> {
        let args = params![op_id, e.attempt, e.at, e.event, e.detail];
        self.execute(&self.sql.event, args).map(|_| ())
    }

    fn commit(self) -> Result<()> {
        self.tx.commit().map_err(|e| failed(self.path, e))
    }
}

impl Batch<'_> {
    /// Rows changed.
    fn execute(&self, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<usize> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute(args))
            .map_err(|e| failed(self.path, e))
    }
}

/// A driver error while importing, as settle says it.
fn failed(path: &Path, e: rusqlite::Error) -> Error {
    super::error::sqlite(path, "importing operations", e)
}
