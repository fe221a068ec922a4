//! Inserting operations with their history, as a service would: for
//! `settle drill import`, the sample data and the benchmark generator. One
//! transaction per batch; idempotent on `(account, op_type, idem_key)`.

use rusqlite::{TransactionBehavior, params};

use super::conn::Sqlite;
use crate::domain::{NewOperation, OpTypeContract};
use crate::error::Result;
use crate::store::import_report::ImportReport;

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
        let err = |e| super::error::sqlite(&path, "importing operations", e);
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
