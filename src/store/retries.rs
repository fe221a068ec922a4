//! The worker's side of `retry_requests`, once for every backend: claiming
//! the oldest claimable request and judging the rules again on the fresh
//! row (a refusal is recorded, never run), and finishing a claim (the
//! attempt, its events, the operation's new state and the request's end,
//! written only while the claim is still this worker's). Each backend runs
//! these inside a transaction of its own ([`RetryTx`]: its SQL and its
//! locking, `BEGIN IMMEDIATE` or `FOR UPDATE SKIP LOCKED`), so a worker
//! reads the same on every backend. Running the receiver is not done here.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::domain::retry_plan::{self, AttemptWrite, EventWrite, FinishPlan};
use crate::domain::retry_run::{
    self, Claimed, Finish, RetryClaim, RetryFinished, RetryGate, RetryRun,
};
use crate::domain::rules::Rule;
use crate::domain::{Declarations, Operation, OperationDetail, OperationId, State, format_time};

/// The request a claim would take.
pub(crate) struct Candidate {
    pub request_id: i64,
    pub op_id: i64,
    /// How many times it ran before.
    pub runs: i64,
    /// The decision that queued it allowed one attempt beyond the maximum.
    pub extra_attempt: bool,
}

/// Who holds a request now: its status, its worker, its runs.
pub(crate) type Holder = (String, Option<String>, i64);

/// Claims the oldest claimable request for `worker` until `now + lease`;
/// `None` when there is none. The rules are judged on the contract merged
/// with what `declared` says of the op type. A request they refuse now is recorded
/// as `failed` and returned as [`Claimed::Refused`].
pub(crate) fn claim<T: RetryTx>(
    tx: &mut T,
    declared: &Declarations,
    worker: &str,
    lease: Duration,
    now: DateTime<Utc>,
) -> Result<Option<Claimed>, T::Fail> {
    let at = format_time(now);
    let Some(c) = tx.candidate(&at)? else {
        return Ok(None);
    };
    let Some(mut detail) = tx.fresh_detail(OperationId(c.op_id))? else {
        let why = format!("operation {} is not in the ledger", c.op_id);
        return refuse(tx, &c, worker, None, &why, None, &at).map(Some);
    };
    detail.declare(declared);
    let gate = match detail.operation.malformed_identity() {
        Some(bad) => RetryGate::Refuse {
            rule: Rule::RowReadable,
            why: bad.refusal(),
            to_state: None,
        },
        None => retry_run::may_run_retry(&detail, c.extra_attempt, now),
    };
    let attempt = match gate {
        RetryGate::Run { attempt } => attempt,
        RetryGate::Refuse {
            rule,
            why,
            to_state,
        } => {
            let why = format!("{}: {why}", rule.label());
            return refuse(tx, &c, worker, Some(&detail), &why, to_state, &at).map(Some);
        }
    };
    // At most a year, so the instant stays a four-digit year that compares
    // as text (an endless lease would never lapse anyway).
    let year = chrono::Duration::days(365);
    let lease = chrono::Duration::from_std(lease).map_or(year, |l| l.min(year));
    let expires = format_time(now.checked_add_signed(lease).unwrap_or(now));
    tx.take_claim(c.request_id, worker, &expires)?;
    Ok(Some(Claimed::Run(Box::new(RetryClaim {
        request_id: c.request_id,
        worker: worker.to_string(),
        run: c.runs + 1,
        claim_expires_at: expires,
        attempt,
        allowance: retry_run::allowance(detail.operation.max_attempts, c.extra_attempt),
        operation: detail.operation,
    }))))
}

/// Records a retry the rules refused: the request `failed` with the reason,
/// a `retry_refused` event, and the operation moved to `to_state`.
fn refuse<T: RetryTx>(
    tx: &mut T,
    c: &Candidate,
    worker: &str,
    detail: Option<&OperationDetail>,
    why: &str,
    to_state: Option<State>,
    at: &str,
) -> Result<Claimed, T::Fail> {
    tx.end_request(&RequestEnd {
        request_id: c.request_id,
        worker: Some(worker),
        status: "failed",
        outcome: why,
        at,
    })?;
    let op_id = detail.map_or(OperationId(0), |d| d.operation.id);
    let mut moved = None;
    if let Some(d) = detail {
        let event = json!({ "request": c.request_id, "worker": worker, "why": why });
        let op = &d.operation;
        let refused = EventWrite {
            attempt: None,
            at: at.to_string(),
            event: "retry_refused",
            detail: event.to_string(),
        };
        tx.insert_event(op.id, &refused)?;
        let state = to_state.clone().unwrap_or_else(|| op.state.clone());
        if tx.move_state(op, &state, at)? {
            moved = to_state;
        }
    }
    Ok(Claimed::Refused(RetryFinished {
        request_id: c.request_id,
        op_id,
        status: "failed",
        to_state: moved,
        outcome: why.to_string(),
        attempt: None,
    }))
}

/// Records how `claim`'s run ended, if the claim is still this worker's;
/// otherwise writes nothing ([`Finish::Lost`]).
pub(crate) fn finish<T: RetryTx>(
    tx: &mut T,
    claim: &RetryClaim,
    run: &RetryRun,
    now: DateTime<Utc>,
) -> Result<Finish, T::Fail> {
    let holder = tx.holder(claim.request_id)?;
    if let Err(held) = retry_plan::still_ours(claim, holder) {
        return Ok(Finish::Lost {
            request_id: claim.request_id,
            held,
        });
    }
    let op = claim.operation.id;
    let (state, used) = tx.state_and_attempts(op)?;
    let plan = retry_plan::plan_finish(claim, run, &State::parse(&state), used, now);
    if let Some(a) = &plan.attempt {
        tx.insert_attempt(op, a)?;
    }
    let at = format_time(now);
    for e in &plan.events {
        tx.insert_event(op, e)?;
    }
    tx.finish_operation(op, &plan, &at)?;
    tx.end_request(&RequestEnd {
        request_id: claim.request_id,
        worker: None,
        status: plan.status,
        outcome: &plan.outcome,
        at: &at,
    })?;
    Ok(Finish::Recorded(RetryFinished {
        request_id: claim.request_id,
        op_id: op,
        status: plan.status,
        to_state: plan.to_state,
        outcome: plan.outcome,
        attempt: plan.attempt.map(|a| a.attempt),
    }))
}

/// What a backend does inside the transaction it holds for a claim or an
/// end, in its own SQL. Every time is settle's time text ([`format_time`]).
pub(crate) trait RetryTx {
    /// The backend's driver error.
    type Fail;

    /// The oldest request that is queued, or claimed with a lease that
    /// passed before `at`, taken so no other worker takes it too.
    fn candidate(&mut self, at: &str) -> Result<Option<Candidate>, Self::Fail>;

    /// The operation with its history, locked against decisions until the
    /// transaction ends (`None`: no such operation).
    fn fresh_detail(&mut self, op: OperationId) -> Result<Option<OperationDetail>, Self::Fail>;

    /// Marks the request claimed by `worker` until `expires`, one run more.
    fn take_claim(
        &mut self,
        request_id: i64,
        worker: &str,
        expires: &str,
    ) -> Result<(), Self::Fail>;

    /// Ends the request as `end` says.
    fn end_request(&mut self, end: &RequestEnd<'_>) -> Result<(), Self::Fail>;

    fn insert_event(&mut self, op: OperationId, e: &EventWrite) -> Result<(), Self::Fail>;

    /// Moves `op` to `state` if it is still at the version it was read at;
    /// whether it was.
    fn move_state(&mut self, op: &Operation, state: &State, at: &str) -> Result<bool, Self::Fail>;

    /// Who holds the request now, locked until the end is written or not.
    fn holder(&mut self, request_id: i64) -> Result<Option<Holder>, Self::Fail>;

    /// The operation's state and the highest attempt it has, locked.
    fn state_and_attempts(&mut self, op: OperationId) -> Result<(String, i64), Self::Fail>;

    fn insert_attempt(&mut self, op: OperationId, a: &AttemptWrite) -> Result<(), Self::Fail>;

    /// The operation's state and result id after a run, as `plan` says
    /// (each left as it is when `None`), its version bumped.
    fn finish_operation(
        &mut self,
        op: OperationId,
        plan: &FinishPlan,
        at: &str,
    ) -> Result<(), Self::Fail>;
}

/// How a request ends ([`RetryTx::end_request`]).
pub(crate) struct RequestEnd<'a> {
    pub request_id: i64,
    /// Set when the request ends at its claim; else the claimer stays.
    pub worker: Option<&'a str>,
    /// `done` or `failed`.
    pub status: &'a str,
    /// The result id, or why.
    pub outcome: &'a str,
    pub at: &'a str,
}
