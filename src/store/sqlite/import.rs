//! Inserting operations with their history, as a service would: for
//! `settle drill import`, the sample data and the benchmark generator. One
//! transaction per batch; idempotent on `(account, op_type, idem_key)`.

use rusqlite::{TransactionBehavior, params};

use super::Sqlite;
use crate::domain::{NewOperation, OpTypeContract};
use crate::error::Result;

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub inserted: usize,
    /// Operations already in the ledger under the same natural key; left
    /// untouched.
    pub already_present: usize,
}

impl Sqlite {
    /// Inserts `operations` (and upserts `contracts`) in one transaction.
    /// An operation whose `(account, op_type, idem_key)` exists is skipped
    /// with its attempts and events, so importing the same batch twice
    /// changes nothing the second time.
    pub fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        self.ensure_writable()?;
        let path = self.path.clone();
        let err = |e| super::sqlite(&path, "importing operations", e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut report = ImportReport::default();
        {
            let mut contract_stmt = tx
                .prepare_cached(
                    "INSERT INTO op_types (op_type, idempotent, key_retention_s, description)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (op_type) DO NOTHING",
                )
                .map_err(err)?;
            for c in contracts {
                contract_stmt
                    .execute(params![
                        c.op_type,
                        c.idempotent,
                        c.key_retention_s,
                        c.description
                    ])
                    .map_err(err)?;
            }
            let mut op_stmt = tx
                .prepare_cached(
                    "INSERT INTO operations (account, op_type, idem_key, fingerprint, params,
                         state, result_id, max_attempts, deadline_at, lease_expires_at,
                         key_expires_at, created_at, updated_at, version)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0)
                     ON CONFLICT (account, op_type, idem_key) DO NOTHING",
                )
                .map_err(err)?;
            let mut attempt_stmt = tx
                .prepare_cached(
                    "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(err)?;
            let mut event_stmt = tx
                .prepare_cached(
                    "INSERT INTO events (op_id, attempt, at, event, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for op in operations {
                let inserted = op_stmt
                    .execute(params![
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
                    ])
                    .map_err(err)?;
                if inserted == 0 {
                    report.already_present += 1;
                    continue;
                }
                report.inserted += 1;
                let op_id = tx.last_insert_rowid();
                for a in &op.attempts {
                    attempt_stmt
                        .execute(params![
                            op_id,
                            a.attempt,
                            a.started_at,
                            a.ended_at,
                            a.outcome.as_str(),
                            a.error,
                            a.response,
                        ])
                        .map_err(err)?;
                }
                for e in &op.events {
                    event_stmt
                        .execute(params![op_id, e.attempt, e.at, e.event, e.detail])
                        .map_err(err)?;
                }
            }
        }
        tx.commit().map_err(err)?;
        Ok(report)
    }
}

/// Creates a ledger the way a service does: a fresh SQLite file and a plain
/// SQL script of its own (tables and rows), without the console's tables,
/// indexes or schema version. Opening it with [`Sqlite::open`] then adopts
/// it. Used by `settle demo` so the sample data goes through the same path
/// as a real service's ledger.
pub fn create_service_ledger(path: &std::path::Path, sql: &str) -> Result<()> {
    if path.exists() {
        return Err(crate::Error::ledger(
            path,
            "already exists",
            "pick a new path for the sample ledger",
        ));
    }
    let mut conn = rusqlite::Connection::open(path)
        .map_err(|e| super::sqlite(path, "creating the ledger file", e))?;
    let tx = conn
        .transaction()
        .map_err(|e| super::sqlite(path, "running the service script", e))?;
    tx.execute_batch(sql)
        .map_err(|e| super::sqlite(path, "running the service script", e))?;
    tx.commit()
        .map_err(|e| super::sqlite(path, "committing the service script", e))
}
