//! The worker's side of `retry_requests` (ledger-v1, issue 11 point 3):
//! claiming a request in one `BEGIN IMMEDIATE` transaction, judging the
//! rules again there on the fresh row (a refusal is recorded, never run),
//! and finishing it in another: the attempt, its events, the operation's
//! new state and the request's end, written together and only while the
//! claim is still this worker's. Running the receiver is not done here.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::json;

use super::conn::Sqlite;
use super::read::load_detail;
use crate::domain::retry_plan;
use crate::domain::retry_run::{
    self, Claimed, Finish, RetryClaim, RetryFinished, RetryGate, RetryRun,
};
use crate::domain::{OperationDetail, OperationId, State, format_time};
use crate::error::Result;
use crate::store::tables::Tables;

impl Sqlite {
    /// Claims the oldest request that is queued, or claimed with a lease
    /// that has passed, for `worker` until `now + lease`; `None` when there
    /// is none. A request the rules refuse now is recorded as `failed` in
    /// the same transaction and returned as [`Claimed::Refused`].
    pub fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        self.ensure_writable()?;
        let (wait, path) = (self.wait, self.path.clone());
        let err = |doing: &str, e: rusqlite::Error| {
            super::error::sqlite(&path, doing, e).busy_after(wait)
        };
        // IMMEDIATE: the write lock is taken before the candidate is read,
        // so two workers can never pick the same row.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the claim transaction", e))?;
        let claimed = claim_in(&tx, worker, lease, now).map_err(|e| err("claiming a retry", e))?;
        tx.commit().map_err(|e| err("committing the claim", e))?;
        Ok(claimed)
    }

    /// Records how `claim`'s run ended, if the claim is still this
    /// worker's; otherwise writes nothing ([`Finish::Lost`]).
    pub fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish> {
        self.ensure_writable()?;
        let (wait, path) = (self.wait, self.path.clone());
        let err = |doing: &str, e: rusqlite::Error| {
            super::error::sqlite(&path, doing, e).busy_after(wait)
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the finishing transaction", e))?;
        let finish =
            finish_in(&tx, claim, run, now).map_err(|e| err("recording the retry's end", e))?;
        tx.commit()
            .map_err(|e| err("committing the retry's end", e))?;
        Ok(finish)
    }
}

fn claim_in(
    tx: &Connection,
    worker: &str,
    lease: Duration,
    now: DateTime<Utc>,
) -> rusqlite::Result<Option<Claimed>> {
    let at = format_time(now);
    // Only workers write claim_expires_at, always with format_time, so the
    // text compares as the instant.
    let candidate = tx
        .prepare_cached(
            "SELECT r.id, r.op_id, r.runs,
                    coalesce((SELECT d.extra_attempt FROM decisions d WHERE d.id = r.decision_id), 0)
             FROM retry_requests r
             WHERE r.status = 'queued' OR (r.status = 'claimed' AND r.claim_expires_at < ?1)
             ORDER BY r.id LIMIT 1",
        )?
        .query_row([&at], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .optional()?;
    let Some((request_id, op_id, runs, extra)) = candidate else {
        return Ok(None);
    };
    let Some(detail) = load_detail(tx, OperationId(op_id), Tables::ALL)? else {
        let why = format!("operation {op_id} is not in the ledger");
        return refuse(tx, request_id, worker, None, &why, None, &at).map(Some);
    };
    let gate = match detail.operation.malformed_identity() {
        Some(bad) => RetryGate::Refuse {
            rule: crate::domain::rules::Rule::RowReadable,
            why: bad.refusal(),
            to_state: None,
        },
        None => retry_run::may_run_retry(&detail, extra != 0, now),
    };
    let attempt = match gate {
        RetryGate::Run { attempt } => attempt,
        RetryGate::Refuse {
            rule,
            why,
            to_state,
        } => {
            let why = format!("{}: {why}", rule.label());
            return refuse(tx, request_id, worker, Some(&detail), &why, to_state, &at).map(Some);
        }
    };
    // At most a year, so the instant stays a four-digit year that compares
    // as text (an endless lease would never lapse anyway).
    let year = chrono::Duration::days(365);
    let lease = chrono::Duration::from_std(lease).map_or(year, |l| l.min(year));
    let expires = format_time(now.checked_add_signed(lease).unwrap_or(now));
    tx.prepare_cached(
        "UPDATE retry_requests SET status = 'claimed', claimed_by = ?1, claim_expires_at = ?2,
             runs = runs + 1
         WHERE id = ?3",
    )?
    .execute(params![worker, expires, request_id])?;
    Ok(Some(Claimed::Run(Box::new(RetryClaim {
        request_id,
        worker: worker.to_string(),
        run: runs + 1,
        claim_expires_at: expires,
        attempt,
        allowance: retry_run::allowance(detail.operation.max_attempts, extra != 0),
        operation: detail.operation,
    }))))
}

/// Records a retry the rules refused: the request `failed` with the reason,
/// a `retry_refused` event, and the operation moved to `to_state`.
fn refuse(
    tx: &Connection,
    request_id: i64,
    worker: &str,
    detail: Option<&OperationDetail>,
    why: &str,
    to_state: Option<State>,
    at: &str,
) -> rusqlite::Result<Claimed> {
    end_request(tx, request_id, Some(worker), "failed", why, at)?;
    let op_id = detail.map_or(OperationId(0), |d| d.operation.id);
    let mut moved = None;
    if let Some(d) = detail {
        let event = json!({ "request": request_id, "worker": worker, "why": why });
        insert_event(
            tx,
            d.operation.id,
            None,
            at,
            "retry_refused",
            &event.to_string(),
        )?;
        let state = to_state
            .clone()
            .unwrap_or_else(|| d.operation.state.clone());
        let changed = tx
            .prepare_cached(
                "UPDATE operations SET state = ?1, updated_at = ?2, version = version + 1
                 WHERE id = ?3 AND version = ?4",
            )?
            .execute(params![
                state.as_str(),
                at,
                d.operation.id.0,
                d.operation.version
            ])?;
        if changed == 1 {
            moved = to_state;
        }
    }
    Ok(Claimed::Refused(RetryFinished {
        request_id,
        op_id,
        status: "failed",
        to_state: moved,
        outcome: why.to_string(),
        attempt: None,
    }))
}

fn finish_in(
    tx: &Connection,
    claim: &RetryClaim,
    run: &RetryRun,
    now: DateTime<Utc>,
) -> rusqlite::Result<Finish> {
    let holder = tx
        .prepare_cached("SELECT status, claimed_by, runs FROM retry_requests WHERE id = ?1")?
        .query_row([claim.request_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    if let Err(held) = retry_plan::still_ours(claim, holder) {
        return Ok(Finish::Lost {
            request_id: claim.request_id,
            held,
        });
    }
    let op = claim.operation.id;
    let (state, used): (String, i64) = tx
        .prepare_cached(
            "SELECT state, (SELECT coalesce(max(attempt), 0) FROM attempts WHERE op_id = ?1)
             FROM operations WHERE id = ?1",
        )?
        .query_row([op.0], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let plan = retry_plan::plan_finish(claim, run, &State::parse(&state), used, now);
    if let Some(a) = &plan.attempt {
        tx.prepare_cached(
            "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
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
    }
    let at = format_time(now);
    for e in &plan.events {
        insert_event(tx, op, e.attempt, &e.at, e.event, &e.detail)?;
    }
    tx.prepare_cached(
        "UPDATE operations SET state = coalesce(?1, state), result_id = coalesce(?2, result_id),
             updated_at = ?3, version = version + 1
         WHERE id = ?4",
    )?
    .execute(params![
        plan.to_state.as_ref().map(State::as_str),
        plan.result_id,
        at,
        op.0
    ])?;
    end_request(tx, claim.request_id, None, plan.status, &plan.outcome, &at)?;
    Ok(Finish::Recorded(RetryFinished {
        request_id: claim.request_id,
        op_id: op,
        status: plan.status,
        to_state: plan.to_state,
        outcome: plan.outcome,
        attempt: plan.attempt.map(|a| a.attempt),
    }))
}

fn insert_event(
    tx: &Connection,
    op: OperationId,
    attempt: Option<i64>,
    at: &str,
    event: &str,
    detail: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO events (op_id, attempt, at, event, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![op.0, attempt, at, event, detail])?;
    Ok(())
}

/// The request's end: `done` or `failed`, when, and the outcome (the
/// result id, or why). `worker` is set when the request ends at its claim.
fn end_request(
    tx: &Connection,
    request_id: i64,
    worker: Option<&str>,
    status: &str,
    outcome: &str,
    at: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE retry_requests SET status = ?1, finished_at = ?2, outcome = ?3,
             claimed_by = coalesce(?4, claimed_by)
         WHERE id = ?5",
    )?
    .execute(params![status, at, outcome, worker, request_id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::{DateTime, TimeZone, Utc};

    use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryEnd, RetryRun};
    use crate::domain::{OperationId, State};
    use crate::query::Query;
    use crate::store::{Ledger, Seek};

    /// The sample's retry_pending operation, with its queued request.
    const PENDING: OperationId = OperationId(15);

    fn t(seconds: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap() + chrono::Duration::seconds(seconds)
    }

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

    fn completed(at: i64) -> RetryRun {
        RetryRun {
            end: RetryEnd::Completed {
                result_id: "refund-1".into(),
            },
            started_at: t(at),
            ended_at: t(at),
            command: Some("/bin/retry".into()),
            exit: "exit 0".into(),
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
