//! What an operation's recorded history proves, in sentences an operator can
//! check against the timeline, and the decision it points to. Pure: reads an
//! [`OperationDetail`] and `now`; never decides anything itself (the rules in
//! [`super::rules`] do), and never treats a missing reply as proof of no
//! effect.

use chrono::{DateTime, Utc};

use super::decision::DecisionKind;
use super::operation::OperationDetail;
use super::rules;
use super::state::State;

/// The facts the events establish and what they suggest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// One sentence per finding, in the order they happened.
    pub facts: Vec<String>,
    /// The decision the facts point to, or why none is needed.
    pub suggestion: String,
}

/// Summarises `detail`'s attempts and events as of `now`.
pub fn summarize(detail: &OperationDetail, now: DateTime<Utc>) -> Evidence {
    let mut facts = Vec::new();
    let committed = detail.committed_effects();
    let mut reply_after_commit = false;
    for number in attempt_numbers(detail) {
        let (fact, replied_after_commit) = tell_attempt(detail, number);
        reply_after_commit |= replied_after_commit;
        facts.extend(fact);
    }
    if committed.is_empty() && !detail.attempts.is_empty() {
        facts.push("no committed event recorded: the effect may or may not exist".to_string());
    }
    if committed.len() > 1 {
        facts.push(format!(
            "{} committed effects for one operation: a duplicate effect ({})",
            committed.len(),
            committed.join(", ")
        ));
    }
    let suggestion = suggest(detail, &committed, reply_after_commit, now);
    Evidence { facts, suggestion }
}

/// Every attempt number the attempts or the events name, in order; `None`
/// (what happened outside any attempt: the budget running out, a service's
/// note) is told last.
fn attempt_numbers(detail: &OperationDetail) -> Vec<Option<i64>> {
    let mut attempt_numbers: Vec<Option<i64>> =
        detail.attempts.iter().map(|a| Some(a.attempt)).collect();
    for e in &detail.events {
        if !attempt_numbers.contains(&e.attempt) {
            attempt_numbers.push(e.attempt);
        }
    }
    attempt_numbers.sort_by_key(|n| (n.is_none(), *n));
    attempt_numbers
}

/// What one attempt's events and outcome establish, as one sentence (none
/// when they establish nothing), and whether this attempt both committed an
/// effect and got a reply back to the caller.
fn tell_attempt(detail: &OperationDetail, number: Option<i64>) -> (Option<String>, bool) {
    let attempt = detail.attempts.iter().find(|a| Some(a.attempt) == number);
    let who = match number {
        Some(n) => format!("attempt {n} "),
        None => String::new(),
    };
    let mut parts: Vec<String> = Vec::new();
    let mut committed_here = false;
    let mut budget_spent = false;
    let mut replied = false;
    for e in detail.events.iter().filter(|e| e.attempt == number) {
        match e.event.as_str() {
            "committed" => {
                committed_here = true;
                parts.push(match e.effect_id() {
                    Some(id) => format!("committed effect {id}"),
                    None => "committed an effect (no id recorded)".to_string(),
                });
            }
            "replayed" => {
                replied = true;
                parts.push(match e.effect_id() {
                    Some(id) => format!("was answered with the replay of effect {id}"),
                    None => "was answered with a replay".to_string(),
                });
            }
            "success" => replied = true,
            "rejected_mismatch" => parts
                .push("was rejected: the key was already used with other parameters".to_string()),
            "budget_exhausted" => budget_spent = true,
            // Told by the attempt's outcome below, or carry no finding.
            "reserved" | "timeout" | "provider_error" => {}
            // Words the contract does not know are shown as they are.
            other => parts.push(format!("recorded event {:?}", other)),
        }
    }
    if let Some(a) = attempt {
        match a.outcome.as_str() {
            "success" => replied = true,
            "timeout" => parts.push("timed out".to_string()),
            "error" => parts.push(match a.error.as_deref() {
                Some(err) => format!("failed: {err}"),
                None => "failed with an error".to_string(),
            }),
            "in_flight" => parts.push("is still in flight".to_string()),
            _ => {}
        }
    }
    // The budget runs out after the attempt's own outcome.
    if budget_spent {
        parts.push("the attempt budget is spent".to_string());
    }
    if replied {
        parts.push("a reply reached the caller".to_string());
    } else if committed_here {
        parts.push("no reply reached the caller".to_string());
    }
    let fact = (!parts.is_empty()).then(|| format!("{who}{}", parts.join("; ")));
    (fact, committed_here && replied)
}

fn suggest(
    detail: &OperationDetail,
    committed: &[String],
    reply_after_commit: bool,
    now: DateTime<Utc>,
) -> String {
    let op = &detail.operation;
    match &op.state {
        State::Completed => return "settled as completed: nothing to do".to_string(),
        State::NotApplied => return "settled as not applied: nothing to do".to_string(),
        State::RetryPending => {
            return if detail.queued_retry().is_some() {
                "a retry is queued for a worker; cancel it with cancel retry if it is wrong"
                    .to_string()
            } else {
                "a worker has claimed the retry; wait for its attempt".to_string()
            };
        }
        State::Conflict => {
            return "the key was reused with different parameters: send a corrected request under a new key; never retry the same key".to_string();
        }
        State::Reserved if !op.is_stale_reservation(now) => {
            return format!(
                "in flight: its owner holds the lease until {}; wait",
                op.lease_expires_at.as_deref().unwrap_or("?")
            );
        }
        _ => {}
    }
    if let Some(effect) = committed.iter().find(|e| !e.is_empty()) {
        let heard = if reply_after_commit {
            ""
        } else {
            " (the effect exists although no reply came back)"
        };
        return format!("record applied with result id {effect}{heard}");
    }
    if !committed.is_empty() {
        return "record applied: an effect was committed (no id recorded); give the receiver's reference as evidence".to_string();
    }
    // A same-key retry is suggested only where the contract's rules would
    // let it through; otherwise say which rule stands in the way.
    let checks = rules::check_kind(DecisionKind::RetrySameKey, detail, now);
    match rules::refusal(&checks) {
        None => "retry with the same key: the receiver honours keys, so it replays an effect that exists or performs it once".to_string(),
        Some(refused) => format!(
            "ask the receiver whether the effect exists; record applied with its reference, or not applied with its evidence (no same-key retry: {})",
            refused.verdict.text()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture;
    use crate::domain::ids::OperationId;
    use crate::domain::operation::{Attempt, Event, OpTypeContract, Operation, Outcome};
    use crate::domain::time::parse_time;

    fn detail(
        state: State,
        events: Vec<(i64, &str, Option<&str>)>,
        outcomes: Vec<Outcome>,
    ) -> OperationDetail {
        OperationDetail {
            operation: Operation {
                state,
                ..fixture::operation()
            },
            attempts: outcomes
                .into_iter()
                .enumerate()
                .map(|(i, outcome)| Attempt {
                    op_id: OperationId(1),
                    attempt: i as i64 + 1,
                    started_at: "2026-11-06T10:00:00Z".into(),
                    ended_at: None,
                    outcome,
                    error: None,
                    response: None,
                })
                .collect(),
            events: events
                .into_iter()
                .enumerate()
                .map(|(i, (attempt, event, detail))| Event {
                    id: i as i64 + 1,
                    op_id: OperationId(1),
                    attempt: Some(attempt),
                    at: "2026-11-06T10:00:01Z".into(),
                    event: event.into(),
                    detail: detail.map(str::to_string),
                })
                .collect(),
            decisions: vec![],
            retry_requests: vec![],
            probes: vec![],
            contract: Some(OpTypeContract {
                op_type: "create_report".into(),
                idempotent: true,
                key_retention_s: None,
                description: None,
            }),
            declared: None,
            drill: None,
            history_malformed: Vec::new(),
        }
    }

    fn now() -> DateTime<Utc> {
        parse_time("2026-11-06T11:00:00Z").unwrap()
    }

    #[test]
    fn committed_without_reply_suggests_applied() {
        let d = detail(
            State::Unknown,
            vec![
                (1, "committed", Some(r#"{"effect_id":"report-1"}"#)),
                (1, "timeout", None),
            ],
            vec![Outcome::Timeout],
        );
        let e = summarize(&d, now());
        assert_eq!(
            e.facts[0],
            "attempt 1 committed effect report-1; timed out; no reply reached the caller"
        );
        assert!(
            e.suggestion
                .starts_with("record applied with result id report-1")
        );
    }

    #[test]
    fn no_committed_event_is_not_proof_of_no_effect() {
        let d = detail(
            State::Unknown,
            vec![(1, "timeout", None)],
            vec![Outcome::Timeout],
        );
        let e = summarize(&d, now());
        assert!(e.facts.iter().any(|f| f.contains("may or may not exist")));
        assert!(e.suggestion.starts_with("retry with the same key"));
    }

    #[test]
    fn two_commits_are_called_a_duplicate() {
        let d = detail(
            State::Unknown,
            vec![
                (1, "committed", Some(r#"{"effect_id":"r-1"}"#)),
                (2, "committed", Some(r#"{"effect_id":"r-2"}"#)),
            ],
            vec![Outcome::Timeout, Outcome::Timeout],
        );
        let e = summarize(&d, now());
        assert!(
            e.facts
                .iter()
                .any(|f| f.contains("duplicate effect (r-1, r-2)"))
        );
    }

    #[test]
    fn conflict_never_suggests_retry() {
        let d = detail(
            State::Conflict,
            vec![(1, "rejected_mismatch", None)],
            vec![Outcome::Conflict],
        );
        let e = summarize(&d, now());
        assert!(e.suggestion.contains("never retry"));
    }
}
