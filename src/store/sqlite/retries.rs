//! The worker's side of `retry_requests` in SQLite: each claim and each
//! end in one `BEGIN IMMEDIATE` transaction (the write lock is taken before
//! the candidate is read, so two workers can never pick the same row), in
//! which [`crate::store::retries`] judges and writes; this file only spells
//! each step in SQLite's SQL.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::conn::Sqlite;
use super::error::sqlite;
use super::reads::load_detail;
use crate::domain::retry_plan::{AttemptWrite, EventWrite, FinishPlan};
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{Operation, OperationDetail, OperationId, State};
use crate::error::Result;
use crate::store::backend::Retries;
use crate::store::retries::{self, Candidate, Holder, RequestEnd, RetryTx};
use crate::store::tables::Tables;

impl Retries for Sqlite {
    /// [`crate::store::backend::Retries::claim_retry`] in one IMMEDIATE
    /// transaction.
    fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        let (wait, path) = (self.wait, self.path.clone());
        let err = |doing: &str, e: rusqlite::Error| sqlite(&path, doing, e).busy_after(wait);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the claim transaction", e))?;
        let claimed = retries::claim(&mut Tx(&tx), &self.declared, worker, lease, now)
            .map_err(|e| err("claiming a retry", e))?;
        tx.commit().map_err(|e| err("committing the claim", e))?;
        Ok(claimed)
    }

    /// [`crate::store::backend::Retries::finish_retry`] in one IMMEDIATE
    /// transaction.
    fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish> {
        let (wait, path) = (self.wait, self.path.clone());
        let err = |doing: &str, e: rusqlite::Error| sqlite(&path, doing, e).busy_after(wait);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the finishing transaction", e))?;
        let finish = retries::finish(&mut Tx(&tx), claim, run, now)
            .map_err(|e| err("recording the retry's end", e))?;
        tx.commit()
            .map_err(|e| err("committing the retry's end", e))?;
        Ok(finish)
    }
}

/// A claim's or an end's transaction on SQLite: the write lock is held.
struct Tx<'a>(&'a Connection);

impl RetryTx for Tx<'_> {
    type Fail = rusqlite::Error;

    fn candidate(&mut self, at: &str) -> rusqlite::Result<Option<Candidate>> {
        // Only workers write claim_expires_at, always with format_time, so
        // the text compares as the instant.
        self.0
            .prepare_cached(
                "SELECT r.id, r.op_id, r.runs,
                        coalesce((SELECT d.extra_attempt FROM decisions d
                                  WHERE d.id = r.decision_id), 0)
                 FROM retry_requests r
                 WHERE r.status = 'queued' OR (r.status = 'claimed' AND r.claim_expires_at < ?1)
                 ORDER BY r.id LIMIT 1",
            )?
            .query_row([at], |r| {
                Ok(Candidate {
                    request_id: r.get(0)?,
                    op_id: r.get(1)?,
                    runs: r.get(2)?,
                    extra_attempt: r.get::<_, i64>(3)? != 0,
                })
            })
            .optional()
    }

    fn fresh_detail(&mut self, op: OperationId) -> rusqlite::Result<Option<OperationDetail>> {
        load_detail(self.0, op, Tables::ALL)
    }

    fn take_claim(&mut self, request_id: i64, worker: &str, expires: &str) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(
                "UPDATE retry_requests SET status = 'claimed', claimed_by = ?1,
                     claim_expires_at = ?2, runs = runs + 1
                 WHERE id = ?3",
            )?
            .execute(params![worker, expires, request_id])?;
        Ok(())
    }

    fn end_request(&mut self, end: &RequestEnd<'_>) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(
                "UPDATE retry_requests SET status = ?1, finished_at = ?2, outcome = ?3,
                     claimed_by = coalesce(?4, claimed_by)
                 WHERE id = ?5",
            )?
            .execute(params![
                end.status,
                end.at,
                end.outcome,
                end.worker,
                end.request_id
            ])?;
        Ok(())
    }

    fn insert_event(&mut self, op: OperationId, e: &EventWrite) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(
                "INSERT INTO events (op_id, attempt, at, event, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![op.0, e.attempt, e.at, e.event, e.detail])?;
        Ok(())
    }

    fn move_state(&mut self, op: &Operation, state: &State, at: &str) -> rusqlite::Result<bool> {
        let changed = self
            .0
            .prepare_cached(
                "UPDATE operations SET state = ?1, updated_at = ?2, version = version + 1
                 WHERE id = ?3 AND version = ?4",
            )?
            .execute(params![state.as_str(), at, op.id.0, op.version])?;
        Ok(changed == 1)
    }

    fn holder(&mut self, request_id: i64) -> rusqlite::Result<Option<Holder>> {
        self.0
            .prepare_cached("SELECT status, claimed_by, runs FROM retry_requests WHERE id = ?1")?
            .query_row([request_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
    }

    fn state_and_attempts(&mut self, op: OperationId) -> rusqlite::Result<(String, i64)> {
        self.0
            .prepare_cached(
                "SELECT state, (SELECT coalesce(max(attempt), 0) FROM attempts WHERE op_id = ?1)
                 FROM operations WHERE id = ?1",
            )?
            .query_row([op.0], |r| Ok((r.get(0)?, r.get(1)?)))
    }

    fn insert_attempt(&mut self, op: OperationId, a: &AttemptWrite) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(
                "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error,
                     response)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                op.0,
                a.attempt,
                a.started_at,
                a.ended_at,
                a.outcome,
                a.error,
                a.response
            ])?;
        Ok(())
    }

    fn finish_operation(
        &mut self,
        op: OperationId,
        plan: &FinishPlan,
        at: &str,
    ) -> rusqlite::Result<()> {
        self.0
            .prepare_cached(
                "UPDATE operations SET state = coalesce(?1, state),
                     result_id = coalesce(?2, result_id), updated_at = ?3, version = version + 1
                 WHERE id = ?4",
            )?
            .execute(params![
                plan.to_state.as_ref().map(State::as_str),
                plan.result_id,
                at,
                op.0
            ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::domain::State;
    use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryEnd, RetryRun};
    use crate::query::Query;
    use crate::store::parity::{PENDING, completed, t};
    use crate::store::{Ledger, Seek};

    fn claim(ledger: &mut Ledger, worker: &str, at: i64) -> Option<RetryClaim> {
        match ledger
            .claim_retry(worker, Duration::from_secs(10), t(at))
            .unwrap()
        {
            Some(Claimed::Run(c)) => Some(*c),
            Some(Claimed::Refused(r)) => panic!("refused: {r:?}"),
            None => None,
        }
    }

    fn list_status(ledger: &Ledger) -> Option<String> {
        let rows = ledger
            .page(&Query::default(), Seek::First, 100, t(0))
            .unwrap();
        rows.into_iter()
            .find(|r| r.id == PENDING)
            .and_then(|r| r.retry_status)
    }

    #[test]
    fn a_lapsed_claim_taken_by_another_worker_records_nothing_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = crate::demo::build(dir.path(), t(0)).unwrap().ledger;
        assert_eq!(list_status(&ledger).as_deref(), Some("queued"));

        let first = claim(&mut ledger, "a", 1).unwrap();
        assert_eq!(first.operation.id, PENDING);
        assert_eq!((first.run, first.attempt), (1, 2));
        assert_eq!(list_status(&ledger).as_deref(), Some("claimed"));
        assert!(claim(&mut ledger, "b", 5).is_none(), "the lease holds");

        let second = claim(&mut ledger, "b", 12).unwrap();
        assert_eq!((second.run, second.attempt), (2, 2));
        let before = ledger.detail(PENDING).unwrap();
        let lost = ledger.finish_retry(&first, &completed(13), t(13)).unwrap();
        assert!(
            matches!(&lost, Finish::Lost { held, .. } if held == "claimed by b"),
            "{lost:?}"
        );
        assert_eq!(ledger.detail(PENDING).unwrap(), before, "nothing written");

        let done = ledger.finish_retry(&second, &completed(14), t(14)).unwrap();
        let Finish::Recorded(done) = done else {
            panic!("{done:?}")
        };
        assert_eq!(
            (done.status, done.to_state),
            ("done", Some(State::Completed))
        );
        let after = ledger.detail(PENDING).unwrap();
        assert_eq!(after.operation.result_id.as_deref(), Some("refund-1"));
        assert_eq!(after.operation.version, before.operation.version + 1);
        let request = after.retry_requests.last().unwrap();
        assert_eq!(request.status, "done");
        assert_eq!(request.progress.claimed_by.as_deref(), Some("b"));
        assert_eq!(request.progress.runs, 2);
        assert_eq!(list_status(&ledger), None, "no longer retry_pending");
        assert!(
            claim(&mut ledger, "c", 30).is_none(),
            "a done request is never claimed"
        );
    }

    #[test]
    fn a_failed_last_attempt_exhausts_the_operation() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = crate::demo::build(dir.path(), t(0)).unwrap().ledger;
        let c = claim(&mut ledger, "a", 1).unwrap();
        let run = RetryRun {
            end: RetryEnd::Failed {
                why: "exit 1: \u{1b}[31mboom".into(),
                timed_out: false,
            },
            ..completed(2)
        };
        // The sample's operation allows three attempts; make this the last.
        let c = RetryClaim {
            allowance: c.attempt,
            ..c
        };
        let Finish::Recorded(done) = ledger.finish_retry(&c, &run, t(2)).unwrap() else {
            panic!("lost")
        };
        assert_eq!(
            (done.status, done.to_state),
            ("failed", Some(State::Exhausted))
        );
        let detail = ledger.detail(PENDING).unwrap();
        let words: Vec<&str> = detail.events.iter().map(|e| e.event.as_str()).collect();
        assert!(
            words.ends_with(&["retry_sent", "provider_error", "budget_exhausted"]),
            "{words:?}"
        );
        assert_eq!(detail.attempts.last().unwrap().outcome.as_str(), "error");
    }
}
