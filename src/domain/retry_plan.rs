//! What finishing a claimed retry writes, decided once for both backends:
//! the attempt row, its events in the contract's words, the operation's
//! new state and result, and the request's end. The store only checks the
//! claim is still the worker's, reads the operation's state and last
//! attempt under its lock, and writes this plan in one transaction.

use serde_json::json;

use super::retry_run::{RetryClaim, RetryEnd, RetryRun, state_after};
use super::state::State;
use super::time::format_time;

/// An attempt row to append.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptWrite {
    pub attempt: i64,
    pub started_at: String,
    pub ended_at: String,
    pub outcome: &'static str,
    pub error: Option<String>,
    /// JSON: the result id, the exit, the command, the worker, the request.
    pub response: String,
}

/// An event row to append.
#[derive(Debug, Clone, PartialEq)]
pub struct EventWrite {
    pub attempt: Option<i64>,
    pub at: String,
    pub event: &'static str,
    /// JSON.
    pub detail: String,
}

/// Everything one finish writes, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishPlan {
    /// None when nothing was sent (no retry configured): no attempt spent.
    pub attempt: Option<AttemptWrite>,
    pub events: Vec<EventWrite>,
    /// Where the operation goes; None when someone else settled it while
    /// the retry ran (its version still moves: the attempt is news).
    pub to_state: Option<State>,
    /// Set on the operation only when it completes here.
    pub result_id: Option<String>,
    /// The request's end: `done` or `failed`, and the result id or why.
    pub status: &'static str,
    pub outcome: String,
}

/// Whether the request is still held by this claim, given what the ledger
/// holds now (`status`, `claimed_by`, `runs`); else how it is held, for
/// the worker's line ("claimed by w2", "gone").
pub fn still_ours(
    claim: &RetryClaim,
    holder: Option<(String, Option<String>, i64)>,
) -> Result<(), String> {
    match holder {
        Some((status, Some(by), runs))
            if status == "claimed" && by == claim.worker && runs == claim.run =>
        {
            Ok(())
        }
        Some((status, by, _)) => Err(format!("{status} by {}", by.unwrap_or_default())),
        None => Err("gone".to_string()),
    }
}

/// The plan for `run` of `claim`, with the operation now in `state` and
/// `used` its highest attempt number (a service may have written one
/// meanwhile: the attempt never collides with it).
pub fn plan_finish(
    claim: &RetryClaim,
    run: &RetryRun,
    state: &State,
    used: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> FinishPlan {
    let at = format_time(now);
    let attempt = claim.attempt.max(used + 1);
    let sent = run.command.is_some();
    let mut events = Vec::new();
    let (to_state, attempt_write) = if sent {
        let (write, sent_event, end_event) = attempt_rows(claim, run, attempt);
        events.extend([sent_event, end_event]);
        (state_after(&run.end, attempt, claim.allowance), Some(write))
    } else {
        // Nothing was sent when no retry is configured for the op type:
        // no attempt is spent, and the operation waits for a person again.
        let why = match &run.end {
            RetryEnd::Failed { why, .. } => why.as_str(),
            _ => "nothing was run",
        };
        events.push(EventWrite {
            attempt: None,
            at: at.clone(),
            event: "retry_refused",
            detail: json!({ "request": claim.request_id, "worker": claim.worker, "why": why })
                .to_string(),
        });
        (State::Unknown, None)
    };
    // Someone else settled the operation while the retry ran: its attempt
    // and events are evidence, but the state they chose stands.
    let moved = (*state == State::RetryPending).then_some(to_state);
    let result_id = match &run.end {
        RetryEnd::Completed { result_id } if moved.is_some() => Some(result_id.clone()),
        _ => None,
    };
    if moved == Some(State::Exhausted) {
        events.push(EventWrite {
            attempt: None,
            at: at.clone(),
            event: "budget_exhausted",
            detail: json!({ "attempts": attempt, "allowed": claim.allowance }).to_string(),
        });
    }
    let (status, outcome) = match &run.end {
        RetryEnd::Failed { why, .. } if !sent => ("failed", why.clone()),
        // Nothing sent cannot have completed, whatever the caller says.
        _ if !sent => ("failed", "no retry was sent".to_string()),
        RetryEnd::Completed { result_id } => ("done", result_id.clone()),
        RetryEnd::Refused => ("done", "refused by the receiver as a conflict".to_string()),
        RetryEnd::Failed { why, .. } => ("failed", why.clone()),
    };
    FinishPlan {
        attempt: attempt_write,
        events,
        to_state: moved,
        result_id,
        status,
        outcome,
    }
}

/// The attempt row, a `retry_sent` event when it started and one event for
/// how it ended, in the contract's words where it has one.
fn attempt_rows(
    claim: &RetryClaim,
    run: &RetryRun,
    attempt: i64,
) -> (AttemptWrite, EventWrite, EventWrite) {
    let (started, ended) = (format_time(run.started_at), format_time(run.ended_at));
    let (outcome, error, event, detail) = match &run.end {
        RetryEnd::Completed { result_id } => (
            "success",
            None,
            "committed",
            json!({ "effect_id": result_id }),
        ),
        RetryEnd::Refused => (
            "conflict",
            Some("the receiver refused the key as a conflict".to_string()),
            "rejected_mismatch",
            json!({ "exit": run.exit }),
        ),
        RetryEnd::Failed { why, timed_out } => (
            if *timed_out { "timeout" } else { "error" },
            Some(why.clone()),
            if *timed_out {
                "timeout"
            } else {
                "provider_error"
            },
            json!({ "why": why }),
        ),
    };
    let result_id = match &run.end {
        RetryEnd::Completed { result_id } => Some(result_id.as_str()),
        _ => None,
    };
    let response = json!({
        "result_id": result_id,
        "exit": run.exit,
        "command": run.command,
        "worker": claim.worker,
        "request": claim.request_id,
    });
    let sent = EventWrite {
        attempt: Some(attempt),
        at: started.clone(),
        event: "retry_sent",
        detail: json!({ "request": claim.request_id, "worker": claim.worker }).to_string(),
    };
    let end = EventWrite {
        attempt: Some(attempt),
        at: ended.clone(),
        event,
        detail: detail.to_string(),
    };
    let write = AttemptWrite {
        attempt,
        started_at: started,
        ended_at: ended,
        outcome,
        error,
        response: response.to_string(),
    };
    (write, sent, end)
}
