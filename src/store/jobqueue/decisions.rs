//! Decisions on a job queue's jobs: one transaction that takes the trail's
//! write lock, locks the job (the engine's workers skip a locked job), and
//! in which [`crate::store::decide`] rereads it, checks the version the
//! operator saw (the row's `xmin`), judges the rules and writes settle's
//! audit row in `settle.decisions`, as on every ledger. The job itself
//! changes only through the engine's own functions or documented updates
//! ([`EngineWrites`]);
//! what the engine cannot be asked for yet (a reopen, cancelling a retry
//! the engine already holds) is refused with nothing written.

use chrono::{DateTime, Utc};
use postgres::GenericClient;
use postgres::types::ToSql;

use super::engine::{EngineSql, EngineWrites};
use super::history::load_job;
use super::mapped::{self, file::Mapping};
use super::session::JobQueue;
use crate::domain::rules::Rule;
use crate::domain::{DecisionDraft, DecisionReceipt, OperationDetail, OperationId, State};
use crate::error::{Error, Result};
use crate::store::backend::Decisions;
use crate::store::decide::{self, DecisionRow, DecisionTx, StateChange, is_row_outcome};
use crate::store::postgres::{head, insert_decision, pg_error, queue_retry};
use crate::store::tables::Tables;

impl Decisions for JobQueue {
    fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        let outcomes = self.decide(std::slice::from_ref(draft), now, false)?;
        decide::only_outcome(outcomes, self.shown(), draft)
    }

    fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        self.decide(drafts, now, true)
    }

    fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        let (sql, tables) = (self.sql, self.tables());
        let detail = self.with_client("reading the job", |client| {
            load_job(client, sql, draft.op_id, tables)
        })?;
        decide::judge_only(detail, self.shown(), &self.declared, draft, now)
    }
}

impl JobQueue {
    /// The decision transaction: every draft in it, each in a savepoint so
    /// a batch (`many`) keeps going past a refused row.
    fn decide(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
        many: bool,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        let Some(writes) = self.sql.writes else {
            return Err(self.refusal("decide on"));
        };
        self.ensure_settle_schema()?;
        let (shown, declared) = (self.shown().to_path_buf(), self.declared.clone());
        let (sql, mapping) = (self.sql, self.mapped);
        let wait_ms = self.wait.as_millis().clamp(1, i32::MAX as u128);
        let failed = |doing: &str| {
            let shown = shown.clone();
            let doing = doing.to_string();
            move |e| pg_error(&shown, &doing, e)
        };
        let mut client = self.client()?;
        let mut tx = client
            .transaction()
            .map_err(failed("starting the decision transaction"))?;
        // Taken first, as on a ledger: each decision links to the newest,
        // so two deciders at once would fork the chain.
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
                writes,
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
}

/// One decision's steps inside the transaction, in the engine's terms or
/// a mapping's.
struct Tx<'a, C: GenericClient> {
    tx: &'a mut C,
    sql: &'static EngineSql,
    writes: &'static EngineWrites,
    /// The team's statements, where a mapping file opened the table.
    mapping: Option<&'static Mapping>,
    shown: &'a std::path::Path,
}

impl<C: GenericClient> Tx<'_, C> {
    fn err(&self, doing: &str) -> impl Fn(postgres::Error) -> Error + use<C> {
        let shown = self.shown.to_path_buf();
        let doing = doing.to_string();
        move |e| pg_error(&shown, &doing, e)
    }

    /// A state the engine has no way to put a job back in (a reopen's):
    /// nothing is written.
    fn not_yet(&self, op: OperationId, state: &State) -> Error {
        Error::Refused {
            op,
            rule: Rule::StateAllows,
            reason: format!(
                "settle cannot return a {} job to {state} yet; nothing was written",
                self.sql.name
            ),
        }
    }
}

impl<C: GenericClient> DecisionTx for Tx<'_, C> {
    type Fail = Error;

    fn fresh_detail(&mut self, op: OperationId) -> Result<Option<OperationDetail>> {
        let locked = self
            .tx
            .query_opt(self.writes.lock, &[&op.0])
            .map_err(self.err("locking the job"))?;
        if locked.is_none() {
            return Ok(None);
        }
        load_job(self.tx, self.sql, op, Tables::ALL).map_err(self.err("reading the job"))
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

    /// Runs the engine's functions for the new state, then checks the job
    /// is where they were to leave it; its new version.
    fn change_state(&mut self, change: &StateChange) -> Result<Option<i64>> {
        if let Some(mapping) = self.mapping {
            return mapped::decide::change_state(self.tx, self.writes, mapping, change, self.shown);
        }
        let (steps, word) = match change.to_state {
            State::Completed => (self.writes.completed, self.writes.completed_word),
            State::NotApplied if super::session::removes_not_applied() => {
                match self.writes.removed {
                    Some(steps) => (steps, self.writes.completed_word),
                    None => (self.writes.not_applied, self.writes.not_applied_word),
                }
            }
            State::NotApplied => (self.writes.not_applied, self.writes.not_applied_word),
            State::RetryPending => (self.writes.retry, self.writes.retry_word),
            other => {
                return Err(self.not_yet(change.op, other));
            }
        };
        let args: [&(dyn ToSql + Sync); 2] = [&change.op.0, &change.result_id];
        for step in steps {
            let failed = self.err("changing the job through the engine");
            let statement = self.tx.prepare(step).map_err(&failed)?;
            let bound = &args[..statement.params().len().min(args.len())];
            self.tx.execute(&statement, bound).map_err(&failed)?;
        }
        let after = self
            .tx
            .query_one(self.writes.after, &[&change.op.0])
            .map_err(self.err("reading the job's new state"))?;
        let (state, version): (String, i64) = (
            after.try_get(0).map_err(self.err("reading the job"))?,
            after.try_get(1).map_err(self.err("reading the job"))?,
        );
        if state != word {
            let removing = matches!(change.to_state, State::NotApplied)
                && word != self.writes.not_applied_word;
            let reason = if removing {
                format!(
                    "{}'s remove_job left the job {state}: it removes a job by its job key, and a job added without one has none; \
                     decide without --remove-not-applied to fail it for good; nothing was written",
                    self.sql.name
                )
            } else {
                format!(
                    "{} left the job {state}, not {word}; nothing was written",
                    self.sql.name
                )
            };
            return Err(Error::Refused {
                op: change.op,
                rule: Rule::StateAllows,
                reason,
            });
        }
        Ok(Some(version))
    }

    /// The request records the hand-over: the engine's own worker holds
    /// the job now (settle's worker never claims it), and the job's events
    /// show the new attempt as it runs.
    fn queue_retry(&mut self, row: &DecisionRow, idem_key: &str) -> Result<i64> {
        let failed = self.err("recording the retry request");
        let id = queue_retry(self.tx, row, idem_key).map_err(&failed)?;
        let holder = match self.mapping {
            Some(_) => "the team's completer".to_string(),
            None => format!("{}'s worker", self.sql.name),
        };
        self.tx
            .execute(
                "UPDATE retry_requests SET status = 'claimed', claimed_by = $2 WHERE id = $1",
                &[&id, &holder],
            )
            .map_err(&failed)?;
        Ok(id)
    }

    fn cancel_retry(&mut self, _request: Option<i64>) -> Result<bool> {
        Ok(false)
    }
}
