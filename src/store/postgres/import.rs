//! PostgreSQL's side of [`crate::store::import`]: the rows bound in the
//! ledger's column types, in one transaction. A time that is not one
//! cannot go into a `timestamptz` column: the batch is refused, naming it.

use std::path::Path;

use chrono::{DateTime, Utc};
use postgres::types::ToSql;
use postgres::{Statement, Transaction};

use super::Pg;
use super::filter::PgSql;
use crate::domain::{NewAttempt, NewEvent, NewOperation, OpTypeContract, TIME_FORMATS, parse_time};
use crate::error::{Error, Result};
use crate::store::import::{ImportSql, Importer, import};
use crate::store::import_report::ImportReport;

impl Pg {
    /// Inserts `operations` (and adds `contracts` not yet there) in one
    /// transaction; see [`crate::store::import`].
    pub fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        self.ensure_writable()?;
        let shown = self.shown.clone();
        let mut tx = self
            .client
            .get_mut()
            .transaction()
            .map_err(|e| failed(&shown, e))?;
        let sql = ImportSql::new(&PgSql);
        let mut prepare = |sql: &str| tx.prepare(sql).map_err(|e| failed(&shown, e));
        let statements = [
            prepare(&sql.contract)?,
            prepare(&format!("{} RETURNING id::bigint", sql.operation))?,
            prepare(&sql.attempt)?,
            prepare(&sql.event)?,
        ];
        let mut batch = Batch {
            tx: &mut tx,
            statements,
            shown: &shown,
        };
        let report = import(&mut batch, operations, contracts)?;
        tx.commit().map_err(|e| failed(&shown, e))?;
        Ok(report)
    }
}

fn failed(shown: &Path, e: postgres::Error) -> Error {
    super::pg_error(shown, "importing operations", e)
}

/// The import's transaction and its prepared statements: contract,
/// operation, attempt, event.
struct Batch<'a, 't> {
    tx: &'a mut Transaction<'t>,
    statements: [Statement; 4],
    shown: &'a Path,
}

impl Importer for Batch<'_, '_> {
    fn contract(&mut self, c: &OpTypeContract) -> Result<()> {
        let args: [&(dyn ToSql + Sync); 4] = [
            &c.op_type,
            &c.idempotent,
            &c.key_retention_s,
            &c.description,
        ];
        self.tx
            .execute(&self.statements[0], &args)
            .map(|_| ())
            .map_err(|e| failed(self.shown, e))
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
                &self.statements[1],
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
        self.tx
            .execute(&self.statements[2], &args)
            .map(|_| ())
            .map_err(|e| failed(self.shown, e))
    }

    fn event(&mut self, op_id: i64, op: &NewOperation, e: &NewEvent) -> Result<()> {
        let at = instant(self.shown, op, "an event's at", &e.at)?;
        let args: [&(dyn ToSql + Sync); 5] = [&op_id, &e.attempt, &at, &e.event, &e.detail];
        self.tx
            .execute(&self.statements[3], &args)
            .map(|_| ())
            .map_err(|e| failed(self.shown, e))
    }
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
