//! Inserting operations with their history into a PostgreSQL ledger, as a
//! service would: for `settle drill import`, the sample data and the
//! benchmark generator. One transaction per batch; idempotent on
//! `(account, op_type, idem_key)`, as on SQLite.

use std::path::Path;

use chrono::{DateTime, Utc};

use super::conn::Pg;
use crate::domain::{NewOperation, OpTypeContract, TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::import_report::ImportReport;

impl Pg {
    /// Inserts `operations` (and adds `contracts` not yet there) in one
    /// transaction. An operation whose `(account, op_type, idem_key)`
    /// exists is skipped with its attempts and events. A time that is not
    /// one cannot go into a `timestamptz` column: the batch is refused,
    /// naming it.
    pub fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        self.ensure_writable()?;
        let shown = self.shown.clone();
        let err = |e| super::error::pg_error(&shown, "importing operations", e);
        let mut tx = self.client.get_mut().transaction().map_err(err)?;
        insert_contracts(&mut tx, contracts).map_err(err)?;
        let op_stmt = tx
            .prepare(
                "INSERT INTO operations (account, op_type, idem_key, fingerprint, params,
                     state, result_id, max_attempts, deadline_at, lease_expires_at,
                     key_expires_at, created_at, updated_at, version)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 0)
                 ON CONFLICT (account, op_type, idem_key) DO NOTHING
                 RETURNING id::bigint",
            )
            .map_err(err)?;
        let attempt_stmt = tx
            .prepare(
                "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .map_err(err)?;
        let event_stmt = tx
            .prepare(
                "INSERT INTO events (op_id, attempt, at, event, detail) VALUES ($1, $2, $3, $4, $5)",
            )
            .map_err(err)?;
        let mut report = ImportReport::default();
        for op in operations {
            let time = |what: &str, t: &str| instant(&shown, op, what, t);
            let opt_time = |what: &str, t: &Option<String>| {
                t.as_deref()
                    .map(|t| instant(&shown, op, what, t))
                    .transpose()
            };
            let inserted = tx
                .query_opt(
                    &op_stmt,
                    &[
                        &op.account,
                        &op.op_type,
                        &op.idem_key,
                        &op.fingerprint,
                        &op.params,
                        &op.state.as_str(),
                        &op.result_id,
                        &op.max_attempts,
                        &opt_time("deadline_at", &op.deadline_at)?,
                        &opt_time("lease_expires_at", &op.lease_expires_at)?,
                        &opt_time("key_expires_at", &op.key_expires_at)?,
                        &time("created_at", &op.created_at)?,
                        &time("updated_at", &op.updated_at)?,
                    ],
                )
                .map_err(err)?;
            let Some(row) = inserted else {
                report.already_present += 1;
                continue;
            };
            report.inserted += 1;
            let op_id: i64 = row.try_get(0).map_err(err)?;
            for a in &op.attempts {
                tx.execute(
                    &attempt_stmt,
                    &[
                        &op_id,
                        &a.attempt,
                        &time("an attempt's started_at", &a.started_at)?,
                        &opt_time("an attempt's ended_at", &a.ended_at)?,
                        &a.outcome.as_str(),
                        &a.error,
                        &a.response,
                    ],
                )
                .map_err(err)?;
            }
            for e in &op.events {
                tx.execute(
                    &event_stmt,
                    &[
                        &op_id,
                        &e.attempt,
                        &time("an event's at", &e.at)?,
                        &e.event,
                        &e.detail,
                    ],
                )
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(report)
    }
}

/// Adds the op types' contracts not there yet; one already there stands.
fn insert_contracts(
    tx: &mut postgres::Transaction<'_>,
    contracts: &[OpTypeContract],
) -> std::result::Result<(), postgres::Error> {
    let stmt = tx.prepare(
        "INSERT INTO op_types (op_type, idempotent, key_retention_s, description)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (op_type) DO NOTHING",
    )?;
    for c in contracts {
        tx.execute(
            &stmt,
            &[
                &c.op_type,
                &c.idempotent,
                &c.key_retention_s,
                &c.description,
            ],
        )?;
    }
    Ok(())
}

/// A time of `op` as PostgreSQL stores it, or an error naming it.
fn instant(shown: &Path, op: &NewOperation, what: &str, text: &str) -> Result<DateTime<Utc>> {
    parse_time(text).ok_or_else(|| {
        Error::ledger(
            shown,
            format!(
                "operation {}: {what} {:?} is not a time",
                crate::text::sanitize(&format!("{}/{}/{}", op.account, op.op_type, op.idem_key)),
                crate::text::sanitize(text)
            ),
            format!("fix the input: {TIME_FORMATS}"),
        )
    })
}
