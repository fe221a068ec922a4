//! What a worker may do with a claimed same-key retry, and where the
//! operation goes afterwards (ledger-v1 "retry_requests").
//! The rules an operator's `retry_same_key` met when it was queued are
//! judged again here on the fresh row, because time passed in between: the
//! key may have expired, the deadline passed, or another run spent the
//! budget. Pure: the store and `settle worker` call it; it never runs or
//! writes anything.

use chrono::{DateTime, Utc};

use super::ids::OperationId;
use super::key_expiry::{KeyExpiry, key_expiry};
use super::operation::{Operation, OperationDetail};
use super::rules::Rule;
use super::state::State;
use super::time::{TIME_FORMATS, format_time, parse_time};

/// Whether a queued retry may run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryGate {
    /// Run it as attempt number `attempt` (`SETTLE_ATTEMPT`).
    Run { attempt: i64 },
    /// Do not run it: `why` says which rule and what to do; the operation
    /// moves to `to_state`, or stays as it is when `None` (it is no longer
    /// `retry_pending`: somebody else settled it meanwhile).
    Refuse {
        rule: Rule,
        why: String,
        to_state: Option<State>,
    },
}

/// Judges a claimed retry on the operation as it is now. `extra_attempt`:
/// the decision that queued it recorded one attempt beyond `max_attempts`
/// (a retry of an `exhausted` operation), so the budget is one larger.
///
/// A refused retry sends the operation back to the triage queue rather than
/// to the state it had before the decision: the request no longer waits,
/// and the outcome is as unresolved as it was. A spent budget or a passed
/// deadline reads `exhausted` (the contract's word for exactly that); a
/// forgotten key or a contract no longer idempotent reads `unknown`, so the
/// operator settles it with evidence instead.
pub fn may_run_retry(
    detail: &OperationDetail,
    extra_attempt: bool,
    now: DateTime<Utc>,
) -> RetryGate {
    let op = &detail.operation;
    if op.state != State::RetryPending {
        return refuse(
            Rule::StateAllows,
            format!(
                "the operation is {} now, not retry_pending: nothing to retry",
                op.state
            ),
            None,
        );
    }
    match &detail.effective_contract() {
        Some(c) if c.idempotent => {}
        _ => {
            return refuse(
                Rule::ContractIdempotent,
                format!(
                    "{} is no longer verified idempotent: a retry could duplicate the effect",
                    op.op_type
                ),
                Some(State::Unknown),
            );
        }
    }
    if let Some(refused) = time_refusal(detail, now) {
        return refused;
    }
    let attempt = detail.attempts_used() + 1;
    let allowance = allowance(op.max_attempts, extra_attempt);
    if attempt > allowance {
        return refuse(
            Rule::Budget,
            format!(
                "{} attempts used of {allowance}: the budget is spent",
                attempt - 1
            ),
            Some(State::Exhausted),
        );
    }
    RetryGate::Run { attempt }
}

fn refuse(rule: Rule, why: String, to_state: Option<State>) -> RetryGate {
    RetryGate::Refuse {
        rule,
        why,
        to_state,
    }
}

/// The refusal, if any, of what time may have changed since the retry was
/// queued: the receiver forgetting the key, or the deadline passing.
fn time_refusal(detail: &OperationDetail, now: DateTime<Utc>) -> Option<RetryGate> {
    match key_expiry(detail) {
        KeyExpiry::Never => {}
        KeyExpiry::Unreadable(why) => {
            return Some(refuse(Rule::KeyNotExpired, why, Some(State::Unknown)));
        }
        KeyExpiry::At { at, why } if at <= now => {
            return Some(refuse(
                Rule::KeyNotExpired,
                format!(
                    "key expired at {} ({why}): the receiver may have forgotten it, a retry could duplicate",
                    format_time(at)
                ),
                Some(State::Unknown),
            ));
        }
        KeyExpiry::At { .. } => {}
    }
    let text = detail.operation.deadline_at.as_deref()?;
    match parse_time(text) {
        Some(deadline) if deadline > now => None,
        Some(_) => Some(refuse(
            Rule::DeadlineNotPassed,
            format!("deadline {text} has passed"),
            Some(State::Exhausted),
        )),
        None => Some(refuse(
            Rule::DeadlineNotPassed,
            format!("deadline_at {text:?} is not a time ({TIME_FORMATS})"),
            Some(State::Unknown),
        )),
    }
}

/// The attempts a retry may reach: `max_attempts`, plus the one extra the
/// queuing decision recorded.
pub fn allowance(max_attempts: i64, extra_attempt: bool) -> i64 {
    max_attempts + i64::from(extra_attempt)
}

/// How a retry that ran came out, as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryEnd {
    /// The receiver has the effect (done now, or a replay of the key).
    Completed { result_id: String },
    /// The receiver refused it as a conflict.
    Refused,
    /// No trustworthy outcome; `timed_out` when the action ran past its
    /// timeout (recorded as the contract's `timeout`, else `error`).
    Failed { why: String, timed_out: bool },
}

/// The operation's state after attempt `attempt` ended with `end`: a failed
/// attempt leaves the outcome unresolved, so `unknown` while budget is left
/// and `exhausted` once `attempt` reached `allowance`.
pub fn state_after(end: &RetryEnd, attempt: i64, allowance: i64) -> State {
    match end {
        RetryEnd::Completed { .. } => State::Completed,
        RetryEnd::Refused => State::Conflict,
        RetryEnd::Failed { .. } if attempt >= allowance => State::Exhausted,
        RetryEnd::Failed { .. } => State::Unknown,
    }
}

/// A retry request a worker holds: claimed in one transaction, with the
/// operation as it was read there and the attempt the gate gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryClaim {
    pub request_id: i64,
    /// Who holds it (`claimed_by`).
    pub worker: String,
    /// `runs` after this claim: a later claim of the same request raises
    /// it, so the pair (worker, run) says whether the claim is still ours.
    pub run: i64,
    pub claim_expires_at: String,
    /// The attempt number this run is (`SETTLE_ATTEMPT`).
    pub attempt: i64,
    /// The attempts the operation may reach (see [`allowance`]).
    pub allowance: i64,
    pub operation: Operation,
}

/// What claiming found: a retry to run, or one the rules refused (already
/// recorded as `failed`, never run).
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    Run(Box<RetryClaim>),
    Refused(RetryFinished),
}

/// What the worker ran, for the attempt row and its events.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryRun {
    pub end: RetryEnd,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// The command as one line, and how it ended in words (`exit 0`,
    /// `timed out after 10 s (killed)`). `None` when no retry is configured
    /// for the op type: nothing was sent, so no attempt is recorded.
    pub command: Option<String>,
    pub exit: String,
}

/// A request the worker has finished and recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryFinished {
    pub request_id: i64,
    pub op_id: OperationId,
    /// `done` or `failed`.
    pub status: &'static str,
    /// Where the operation went; `None` when it was no longer
    /// `retry_pending` and was left as it was.
    pub to_state: Option<State>,
    /// The result id, or why it failed or was refused (raw: sanitise it
    /// before showing it).
    pub outcome: String,
    /// The attempt recorded, if it ran.
    pub attempt: Option<i64>,
}

/// What finishing came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Recorded(RetryFinished),
    /// The claim was no longer this worker's (it lapsed and another worker
    /// took the request): nothing was written, and the other worker's run
    /// is a replay under the same key.
    Lost {
        request_id: i64,
        /// The request as it is now (`claimed by w2`, `done by w2`).
        held: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture;
    use crate::domain::operation::{Attempt, Outcome};

    fn now() -> DateTime<Utc> {
        parse_time("2026-11-06T12:00:00Z").unwrap()
    }

    fn pending(change: impl FnOnce(&mut OperationDetail)) -> OperationDetail {
        let mut d = fixture::detail(Operation {
            state: State::RetryPending,
            ..fixture::operation()
        });
        change(&mut d);
        d
    }

    fn attempts(n: i64) -> Vec<Attempt> {
        (1..=n)
            .map(|attempt| Attempt {
                op_id: OperationId(1),
                attempt,
                started_at: "2026-11-06T10:00:00Z".into(),
                ended_at: None,
                outcome: Outcome::Timeout,
                error: None,
                response: None,
            })
            .collect()
    }

    /// (what the row looks like, extra attempt, expected rule refused or
    /// attempt run, state it moves to on refusal)
    #[test]
    fn each_rule_refuses_or_lets_the_retry_run() {
        type Change = fn(&mut OperationDetail);
        type Want = Result<i64, (Rule, Option<State>)>;
        let cases: Vec<(&str, Change, bool, Want)> = vec![
            (
                "fresh, one attempt used",
                |d| d.attempts = attempts(1),
                false,
                Ok(2),
            ),
            ("no attempts yet", |_| {}, false, Ok(1)),
            (
                "budget spent",
                |d| d.attempts = attempts(3),
                false,
                Err((Rule::Budget, Some(State::Exhausted))),
            ),
            (
                "budget spent, extra attempt recorded",
                |d| d.attempts = attempts(3),
                true,
                Ok(4),
            ),
            (
                "extra attempt already spent",
                |d| d.attempts = attempts(4),
                true,
                Err((Rule::Budget, Some(State::Exhausted))),
            ),
            (
                "deadline passed",
                |d| d.operation.deadline_at = Some("2026-11-06T11:00:00Z".into()),
                false,
                Err((Rule::DeadlineNotPassed, Some(State::Exhausted))),
            ),
            (
                "deadline ahead",
                |d| d.operation.deadline_at = Some("2026-11-06T13:00:00Z".into()),
                false,
                Ok(1),
            ),
            (
                "deadline unreadable",
                |d| d.operation.deadline_at = Some("soon".into()),
                false,
                Err((Rule::DeadlineNotPassed, Some(State::Unknown))),
            ),
            (
                "key expired",
                |d| d.operation.key_expires_at = Some("2026-11-06 11:59:59".into()),
                false,
                Err((Rule::KeyNotExpired, Some(State::Unknown))),
            ),
            (
                "key kept",
                |d| d.operation.key_expires_at = Some("2026-11-07T00:00:00Z".into()),
                false,
                Ok(1),
            ),
            (
                "contract no longer idempotent",
                |d| d.contract.as_mut().unwrap().idempotent = false,
                false,
                Err((Rule::ContractIdempotent, Some(State::Unknown))),
            ),
            (
                "contract row gone",
                |d| d.contract = None,
                false,
                Err((Rule::ContractIdempotent, Some(State::Unknown))),
            ),
            (
                "settled meanwhile",
                |d| d.operation.state = State::Completed,
                false,
                Err((Rule::StateAllows, None)),
            ),
        ];
        for (name, change, extra, want) in cases {
            let got = may_run_retry(&pending(change), extra, now());
            match (want, got) {
                (Ok(n), RetryGate::Run { attempt }) => assert_eq!(attempt, n, "{name}"),
                (
                    Err((rule, to)),
                    RetryGate::Refuse {
                        rule: r,
                        to_state,
                        why,
                    },
                ) => {
                    assert_eq!((r, to_state), (rule, to), "{name}: {why}");
                    assert!(!why.is_empty(), "{name}");
                }
                (want, got) => panic!("{name}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn a_failed_attempt_exhausts_only_the_last_of_the_budget() {
        let failed = RetryEnd::Failed {
            why: "exit 1".into(),
            timed_out: false,
        };
        assert_eq!(state_after(&failed, 2, 3), State::Unknown);
        assert_eq!(state_after(&failed, 3, 3), State::Exhausted);
        assert_eq!(
            state_after(&failed, 4, allowance(3, true)),
            State::Exhausted
        );
        let done = RetryEnd::Completed {
            result_id: "r-1".into(),
        };
        assert_eq!(state_after(&done, 3, 3), State::Completed);
        assert_eq!(state_after(&RetryEnd::Refused, 1, 3), State::Conflict);
    }
}
