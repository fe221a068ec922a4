//! Decisions on a mapped table's rows: the job queues' decision
//! transaction (the trail's write lock, the row locked and reread, the
//! version checked, settle's audit row), where the team's own statement
//! for the decision runs with the row's id, the version settle read and
//! the operator's result id, and must change exactly that one row: any
//! other count rolls the whole decision back (a version conflict, exit 4).
//! A decision the mapping has no statement for is settle's audit row only.

use chrono::{DateTime, Utc};
use postgres::GenericClient;
use postgres::types::ToSql;

use super::file::{Field, Mapping};
use super::sql::{PARAMS, server_words};
use crate::domain::rules::Rule;
use crate::domain::{DecisionDraft, DecisionReceipt, OperationDetail, OperationId, State};
use crate::error::{Error, Result};
use crate::store::decide::{self, DecisionRow, DecisionTx, StateChange, is_row_outcome};
use crate::store::jobqueue::engine::EngineSql;
use crate::store::jobqueue::history::load_job;
use crate::store::jobqueue::session::JobQueue;
use crate::store::postgres::{head, insert_decision, pg_error, queue_retry};
use crate::store::tables::Tables;

/// The decision transaction on a mapped table: every draft in it, each in
/// a savepoint so a batch (`many`) keeps going past a refused row.
pub(crate) fn decide(
    queue: &mut JobQueue,
    mapping: &'static Mapping,
    drafts: &[DecisionDraft],
    now: DateTime<Utc>,
    many: bool,
) -> Result<Vec<Result<DecisionReceipt>>> {
    queue.ensure_settle_schema()?;
    let (shown, declared) = (queue.shown().to_path_buf(), queue.declared.clone());
    let (sql, wait_ms) = (queue.sql, queue.wait.as_millis().clamp(1, i32::MAX as u128));
    let failed = |doing: &str| {
        let shown = shown.clone();
        let doing = doing.to_string();
        move |e| pg_error(&shown, &doing, e)
    };
    let mut client = queue.client()?;
    let mut tx = client
        .transaction()
        .map_err(failed("starting the decision transaction"))?;
    // As on every ledger: each decision links to the newest.
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {wait_ms}; SET LOCAL statement_timeout = 0;
         LOCK TABLE settle.decisions IN SHARE ROW EXCLUSIVE MODE"
    ))
    .map_err(failed("waiting for the audit trail's write lock"))?;
    let mut outcomes = Vec::with_capacity(drafts.len());
    for draft in drafts {
        let mut row = tx
            .savepoint("settle_row")
            .map_err(failed("starting a row of the batch"))?;
        let mut job = Tx {
            tx: &mut row,
            sql,
            mapping,
            shown: &shown,
        };
        match decide::decide(&mut job, &shown, &declared, draft, now) {
            Ok((receipt, _)) => {
                row.commit().map_err(failed("keeping a row of the batch"))?;
                outcomes.push(Ok(receipt));
            }
            Err(e) if many && is_row_outcome(&e) => {
                row.rollback()
                    .map_err(failed("taking back a refused row"))?;
                outcomes.push(Err(e));
            }
            Err(e) => return Err(e),
        }
    }
    tx.commit().map_err(failed("committing the decision"))?;
    Ok(outcomes)
}

/// One decision's steps inside the transaction.
struct Tx<'a, C: GenericClient> {
    tx: &'a mut C,
    sql: &'static EngineSql,
    mapping: &'static Mapping,
    shown: &'a std::path::Path,
}

impl<C: GenericClient> Tx<'_, C> {
    fn err(&self, doing: &str) -> impl Fn(postgres::Error) -> Error + use<C> {
        let shown = self.shown.to_path_buf();
        let doing = doing.to_string();
        move |e| pg_error(&shown, &doing, e)
    }

    /// The team's statement failed: its line and the server's words.
    fn statement_failed(&self, field: &Field, e: &postgres::Error) -> Error {
        self.mapping.refused(
            field,
            &format!(
                "failed on the server, so nothing was written: {}",
                server_words(e)
            ),
            "correct the statement in the mapping file",
        )
    }
}

impl<C: GenericClient> DecisionTx for Tx<'_, C> {
    type Fail = Error;

    fn fresh_detail(&mut self, op: OperationId) -> Result<Option<OperationDetail>> {
        let Some(writes) = self.sql.writes else {
            return Ok(None);
        };
        let locked = self
            .tx
            .query_opt(writes.lock, &[&op.0])
            .map_err(self.err("locking the row"))?;
        if locked.is_none() {
            return Ok(None);
        }
        load_job(self.tx, self.sql, op, Tables::ALL).map_err(self.err("reading the row"))
    }

    fn chain_head(&mut self) -> Result<String> {
        head(self.tx).map_err(self.err("writing the decision"))
    }

    fn next_decision_id(&mut self) -> Result<i64> {
        self.tx
            .query_one(decide::NEXT_DECISION_ID, &[])
            .and_then(|r| r.try_get(0))
            .map_err(self.err("writing the decision"))
    }

    fn insert_decision(&mut self, row: &DecisionRow) -> Result<()> {
        insert_decision(self.tx, row).map_err(self.err("writing the decision"))
    }

    /// Runs the mapping's statement for the decision, guarded on the
    /// version the operator saw; without one, the row stays as it is.
    fn change_state(&mut self, change: &StateChange) -> Result<Option<i64>> {
        let statement = match change.to_state {
            State::Completed => &self.mapping.applied,
            State::NotApplied => &self.mapping.not_applied,
            State::RetryPending => &self.mapping.retry_same_key,
            other => {
                return Err(Error::Refused {
                    op: change.op,
                    rule: Rule::StateAllows,
                    reason: format!(
                        "settle cannot return a mapped row to {other}; nothing was written"
                    ),
                });
            }
        };
        let Some(field) = statement else {
            return Ok(Some(change.version));
        };
        let args: [&(dyn ToSql + Sync); 3] = [&change.op.0, &change.version, &change.result_id];
        let prepared = self
            .tx
            .prepare_typed(&field.text, &PARAMS)
            .map_err(|e| self.statement_failed(field, &e))?;
        let changed = self
            .tx
            .execute(&prepared, &args)
            .map_err(|e| self.statement_failed(field, &e))?;
        if changed == 0 {
            // The row is not at the version the operator saw: the caller
            // refuses it as a conflict and rolls back.
            return Ok(None);
        }
        if changed > 1 {
            return Err(self.mapping.refused(
                field,
                &format!("changed {changed} rows, not the one decided on, so nothing was written"),
                "make the statement's WHERE name the one row: WHERE id = $1 AND <version> = $2",
            ));
        }
        let Some(writes) = self.sql.writes else {
            return Ok(None);
        };
        let after = self
            .tx
            .query_opt(writes.after, &[&change.op.0])
            .map_err(self.err("reading the row's new version"))?;
        match after {
            Some(row) => Ok(Some(row.try_get(1).map_err(self.err("reading the row"))?)),
            None => Ok(None),
        }
    }

    /// The request records the hand-over: the team's own completer takes
    /// the row once its statement released it.
    fn queue_retry(&mut self, row: &DecisionRow, idem_key: &str) -> Result<i64> {
        let failed = self.err("recording the retry request");
        let id = queue_retry(self.tx, row, idem_key).map_err(&failed)?;
        self.tx
            .execute(
                "UPDATE retry_requests SET status = 'claimed', claimed_by = $2 WHERE id = $1",
                &[&id, &"the team's completer"],
            )
            .map_err(&failed)?;
        Ok(id)
    }

    fn cancel_retry(&mut self, _request: Option<i64>) -> Result<bool> {
        Ok(false)
    }
}
