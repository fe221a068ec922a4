//! Inserting operations with their history as a service would, once for
//! both backends: for `settle drill import`, the sample data and the
//! benchmark generator. One transaction per batch; idempotent on
//! `(account, op_type, idem_key)`: an operation already there is skipped
//! with its attempts and events, so importing the same batch twice changes
//! nothing the second time. Each backend binds the rows in its own types
//! ([`Importer`]); the statements and the walk are here.

use super::import_report::ImportReport;
use super::sql::Dialect;
use crate::domain::{NewAttempt, NewEvent, NewOperation, OpTypeContract};
use crate::error::Result;

/// An import's statements in one dialect.
pub(super) struct ImportSql {
    /// A contract already there stands.
    pub contract: String,
    /// Nothing happens when the natural key is there.
    pub operation: String,
    pub attempt: String,
    pub event: String,
}

impl ImportSql {
    pub(super) fn new(d: &dyn Dialect) -> ImportSql {
        let values = |n: usize| {
            (1..=n)
                .map(|i| format!("{}{i}", d.param_prefix()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        ImportSql {
            contract: format!(
                "INSERT INTO op_types (op_type, idempotent, key_retention_s, description)
                 VALUES ({}) ON CONFLICT (op_type) DO NOTHING",
                values(4)
            ),
            operation: format!(
                "INSERT INTO operations (account, op_type, idem_key, fingerprint, params,
                     state, result_id, max_attempts, deadline_at, lease_expires_at,
                     key_expires_at, created_at, updated_at, version)
                 VALUES ({}, 0)
                 ON CONFLICT (account, op_type, idem_key) DO NOTHING",
                values(13)
            ),
            attempt: format!(
                "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
                 VALUES ({})",
                values(7)
            ),
            event: format!(
                "INSERT INTO events (op_id, attempt, at, event, detail) VALUES ({})",
                values(5)
            ),
        }
    }
}

/// An open import transaction: each method writes one row with
/// [`ImportSql`]'s statement of its kind.
pub(super) trait Importer {
    fn contract(&mut self, c: &OpTypeContract) -> Result<()>;
    /// The new operation's id, or `None` when its natural key was there.
    fn operation(&mut self, op: &NewOperation) -> Result<Option<i64>>;
    /// `op` names the operation in an error.
    fn attempt(&mut self, op_id: i64, op: &NewOperation, a: &NewAttempt) -> Result<()>;
    fn event(&mut self, op_id: i64, op: &NewOperation, e: &NewEvent) -> Result<()>;
    /// Makes the whole batch durable, or none of it.
    fn commit(self) -> Result<()>;
}

/// Writes `contracts`, then each operation not there yet with its history,
/// and commits.
pub(super) fn import(
    mut into: impl Importer,
    operations: &[NewOperation],
    contracts: &[OpTypeContract],
) -> Result<ImportReport> {
    for c in contracts {
        into.contract(c)?;
    }
    let mut report = ImportReport::default();
    for op in operations {
        let Some(op_id) = into.operation(op)? else {
            report.already_present += 1;
            continue;
        };
        report.inserted += 1;
        for a in &op.attempts {
            into.attempt(op_id, op, a)?;
        }
        for e in &op.events {
            into.event(op_id, op, e)?;
        }
    }
    into.commit()?;
    Ok(report)
}
