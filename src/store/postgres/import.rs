//! PostgreSQL's side of [`crate::store::import`]: the rows bound in the
//! ledger's column types, in one transaction. A time that is not one
//! cannot go into a `timestamptz` column: the batch is refused, naming it.

use std::path::Path;

use chrono::{DateTime, Utc};
use postgres::types::ToSql;
use postgres::{Statement, Transaction};

use super::conn::Pg;
use super::filter::PgSql;
use crate::domain::{NewAttempt, NewEvent, NewOperation, OpTypeContract, TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::backend::Import;
use crate::store::import::{ImportSql, Importer, import};
use crate::store::import_report::ImportReport;

/// In one transaction; see [`crate::store::import`].
impl Import for Pg {
    fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        let shown = self.shown.clone();
        let mut tx = self
            .client
            .get_mut()
            .transaction()
            .map_err(|e| failed(&shown, e))?;
        let sql = ImportSql::new(&PgSql::ALL);
        let mut prepare = |sql: &str| tx.prepare(sql).map_err(|e| failed(&shown, e));
        let prepared = Prepared {
            contract: prepare(&sql.contract)?,
            operation: prepare(&format!("{} RETURNING id::bigint", sql.operation))?,
            attempt: prepare(&sql.attempt)?,
            event: prepare(&sql.event)?,
        };
        let batch = Batch {
            tx,
            prepared,
            shown: &shown,
        };
        import(batch, operations, contracts)
    }
}

/// The import's transaction and its prepared statements.
struct Batch<'a> {
    tx: Transaction<'a>,
    prepared: Prepared,
    shown: &'a Path,
}

/// [`ImportSql`]'s statements, prepared once for the whole batch.
struct Prepared {
    contract: Statement,
    operation: Statement,
    attempt: Statement,
    event: Statement,
}

impl Importer for Batch<'_> {
    fn contract(&mut self, c: &OpTypeContract) -> Result<()> {
        let args: [&(dyn ToSql + Sync); 4] = [
            &c.op_type,
            &c.idempotent,
            &c.key_retention_s,
            &c.description,
        ];
        execute(&mut self.tx, &self.prepared.contract, &args, self.shown)
    }

    fn operation(&mut self, op: &NewOperation) -> Result<Option<i64>> {
        let time = |what: &str, t: &str| instant(self.shown, op, what, t);
        let opt_time = |what: &str, t: &Option<String>| {
            t.as_deref()
                .map(|t| instant(self.shown, op, what, t))
                .transpose()
        };
        let inserted = self
            .tx
            .query_opt(
                &self.prepared.operation,
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
            .map_err(|e| failed(self.shown, e))?;
        inserted
            .map(|row| row.try_get(0).map_err(|e| failed(self.shown, e)))
            .transpose()
    }

    fn attempt(&mut self, op_id: i64, op: &NewOperation, a: &NewAttempt) -> Result<()> {
        let started = instant(self.shown, op, "an attempt's started_at", &a.started_at)?;
        let ended = a
            .ended_at
            .as_deref()
            .map(|t| instant(self.shown, op, "an attempt's ended_at", t))
            .transpose()?;
        let args: [&(dyn ToSql + Sync); 7] = [
            &op_id,
            &a.attempt,
            &started,
            &ended,
            &a.outcome.as_str(),
            &a.error,
            &a.response,
        ];
        execute(&mut self.tx, &self.prepared.attempt, &args, self.shown)
    }

    fn event(&mut self, op_id: i64, op: &NewOperation, e: &NewEvent) -> Result<()> {
        let at = instant(self.shown, op, "an event's at", &e.at)?;
        let args: [&(dyn ToSql + Sync); 5] = [&op_id, &e.attempt, &at, &e.event, &e.detail];
        execute(&mut self.tx, &self.prepared.event, &args, self.shown)
    }

    fn commit(self) -> Result<()> {
        self.tx.commit().map_err(|e| failed(self.shown, e))
    }
}

fn execute(
    tx: &mut Transaction<'_>,
    statement: &Statement,
    args: &[&(dyn ToSql + Sync)],
    shown: &Path,
) -> Result<()> {
    tx.execute(statement, args)
        .map(|_| ())
        .map_err(|e| failed(shown, e))
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

/// A driver error while importing, as settle says it.
fn failed(shown: &Path, e: postgres::Error) -> Error {
    super::error::pg_error(shown, "importing operations", e)
}
