//! The decision rules of ledger-v1 ("Rules the console enforces when an
//! operator decides"), as one pure function. The console's form shows every
//! check with its verdict; the store runs the same checks again on fresh data
//! inside the write transaction, so what the operator saw and what is enforced
//! cannot drift apart.

use chrono::{DateTime, Utc};

use super::decision::{DecisionDraft, DecisionKind};
use super::key_expiry::KeyExpiry;
use super::operation::OperationDetail;
use super::state::State;
use super::time::{TIME_FORMATS, format_time, parse_time};

/// Which rule a check is about. The words are what refusals and the form say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The operation's state admits this kind of decision.
    StateAllows,
    /// `applied` needs a result id or evidence; `not_applied` needs evidence.
    EvidenceGiven,
    /// `not_applied` with a `committed` event needs an explicit override.
    CommittedEffect,
    /// `retry_same_key` needs `op_types.idempotent = 1`.
    ContractIdempotent,
    /// `retry_same_key` needs the receiver to still remember the key.
    KeyNotExpired,
    /// `retry_same_key` is refused where the op type's latest drill found
    /// a second effect under one key, unless overridden with a note.
    Drilled,
    /// `retry_same_key` needs the deadline not to have passed.
    DeadlineNotPassed,
    /// Attempts used against `max_attempts` (informational; exhausted
    /// operations spend one extra attempt).
    Budget,
    /// `cancel_retry` needs a request still `queued`.
    RetryStillQueued,
    /// `reopen` needs the undone decision to be the last write.
    NothingSince,
    /// The row's identity columns read as stored, so a decision cannot land
    /// on the wrong operation or compare the wrong version.
    RowReadable,
}

impl Rule {
    pub fn label(self) -> &'static str {
        match self {
            Rule::StateAllows => "state allows it",
            Rule::EvidenceGiven => "evidence given",
            Rule::CommittedEffect => "committed effect seen",
            Rule::ContractIdempotent => "contract idempotent",
            Rule::KeyNotExpired => "key retention",
            Rule::Drilled => "drilled contract",
            Rule::DeadlineNotPassed => "deadline not passed",
            Rule::Budget => "attempt budget",
            Rule::RetryStillQueued => "retry still queued",
            Rule::NothingSince => "nothing changed since",
            Rule::RowReadable => "row readable",
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The rule holds; the text says why.
    Pass(String),
    /// The rule refuses the decision; the text says why and what to do.
    Fail(String),
    /// Worth knowing, does not block (e.g. an extra attempt will be spent).
    Note(String),
}

impl Verdict {
    pub fn text(&self) -> &str {
        match self {
            Verdict::Pass(t) | Verdict::Fail(t) | Verdict::Note(t) => t,
        }
    }

    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCheck {
    pub rule: Rule,
    pub verdict: Verdict,
}

impl RuleCheck {
    fn pass(rule: Rule, text: impl Into<String>) -> Self {
        RuleCheck {
            rule,
            verdict: Verdict::Pass(text.into()),
        }
    }
    fn fail(rule: Rule, text: impl Into<String>) -> Self {
        RuleCheck {
            rule,
            verdict: Verdict::Fail(text.into()),
        }
    }
    fn note(rule: Rule, text: impl Into<String>) -> Self {
        RuleCheck {
            rule,
            verdict: Verdict::Note(text.into()),
        }
    }
}

/// The state a decision moves the operation to, or `None` when no state
/// follows from it (a refused `cancel_retry` or `reopen` without its target).
pub fn target_state(draft: &DecisionDraft, detail: &OperationDetail) -> Option<State> {
    match draft.kind {
        DecisionKind::Applied => Some(State::Completed),
        DecisionKind::NotApplied => Some(State::NotApplied),
        DecisionKind::RetrySameKey => Some(State::RetryPending),
        DecisionKind::CancelRetry => {
            let request = detail.queued_retry()?;
            let decision = detail
                .decisions
                .iter()
                .find(|d| d.id == request.decision_id)?;
            Some(State::parse(&decision.from_state))
        }
        DecisionKind::Reopen => {
            let undone = detail
                .decisions
                .iter()
                .find(|d| Some(d.id) == draft.undoes)?;
            Some(State::parse(&undone.from_state))
        }
    }
}

/// Every check that applies to `draft` on `detail` at `now`, in the order the
/// form shows them. The decision is allowed when none is [`Verdict::Fail`].
pub fn check(
    draft: &DecisionDraft,
    detail: &OperationDetail,
    now: DateTime<Utc>,
) -> Vec<RuleCheck> {
    // First, as the store refuses it first: on a row whose identity does not
    // read as stored, no other rule's verdict can be trusted.
    let mut checks: Vec<RuleCheck> = row_readable_check(detail).into_iter().collect();
    checks.push(state_check(draft.kind, detail, now));
    match draft.kind {
        DecisionKind::Applied | DecisionKind::NotApplied => {
            checks.push(evidence_check(draft));
            checks.extend(committed_effect_check(draft, detail));
        }
        DecisionKind::RetrySameKey => checks.extend([
            contract_check(detail),
            drilled_check(draft, detail),
            key_expiry_check(detail, now),
            deadline_check(detail, now),
            budget_check(detail),
        ]),
        DecisionKind::CancelRetry => checks.push(retry_queued_check(detail)),
        DecisionKind::Reopen => checks.push(reopen_check(draft, detail)),
    }
    checks
}

/// A refusal when one of the row's identity columns is malformed; `None` on
/// a sound row, so the form lists it only when it bites.
fn row_readable_check(detail: &OperationDetail) -> Option<RuleCheck> {
    let bad = detail.operation.malformed_identity()?;
    Some(RuleCheck::fail(Rule::RowReadable, bad.refusal()))
}

fn has_text(text: &Option<String>) -> bool {
    text.as_deref().is_some_and(|t| !t.trim().is_empty())
}

/// `applied` needs a result id or evidence; `not_applied` needs evidence,
/// since the absence of a reply proves nothing.
fn evidence_check(draft: &DecisionDraft) -> RuleCheck {
    let (given, pass, fail) = if draft.kind == DecisionKind::Applied {
        (
            has_text(&draft.result_id) || has_text(&draft.evidence),
            "result id or evidence given",
            "applied needs a result id or evidence text",
        )
    } else {
        (
            has_text(&draft.evidence),
            "evidence given",
            "not applied needs evidence text: a missing reply is not evidence of no effect",
        )
    };
    if given {
        RuleCheck::pass(Rule::EvidenceGiven, pass)
    } else {
        RuleCheck::fail(Rule::EvidenceGiven, fail)
    }
}

/// What the `committed` events say about the decision. For `applied` they
/// only matter when the result id names another effect (a note, `None`
/// otherwise); `not_applied` against a committed effect contradicts the
/// ledger's own evidence, so it is refused unless overridden with a note.
fn committed_effect_check(draft: &DecisionDraft, detail: &OperationDetail) -> Option<RuleCheck> {
    let effects = detail.committed_effects();
    if draft.kind == DecisionKind::Applied {
        let result = draft
            .result_id
            .as_deref()
            .filter(|r| !r.trim().is_empty())?;
        return (!effects.is_empty() && !effects.iter().any(|e| e == result)).then(|| {
            RuleCheck::note(
                Rule::CommittedEffect,
                format!(
                    "result id {result} differs from the committed effect {}",
                    effects.join(", ")
                ),
            )
        });
    }
    Some(if effects.is_empty() {
        RuleCheck::pass(Rule::CommittedEffect, "no committed event recorded")
    } else if draft.override_committed && has_text(&draft.note) {
        RuleCheck::note(
            Rule::CommittedEffect,
            format!(
                "events show committed effect {}; overridden with a note",
                describe_effects(&effects)
            ),
        )
    } else {
        RuleCheck::fail(
            Rule::CommittedEffect,
            format!(
                "events show committed effect {}; record applied, or override with a note",
                describe_effects(&effects)
            ),
        )
    })
}

/// A retry under the same key is safe only if the receiver honours keys.
fn contract_check(detail: &OperationDetail) -> RuleCheck {
    let op_type = &detail.operation.op_type;
    match &detail.effective_contract() {
        Some(c) if c.idempotent => RuleCheck::pass(
            Rule::ContractIdempotent,
            format!("{op_type} honours idempotency keys"),
        ),
        Some(_) => RuleCheck::fail(
            Rule::ContractIdempotent,
            format!("{op_type} is not verified idempotent: a retry could duplicate the effect"),
        ),
        None => RuleCheck::fail(
            Rule::ContractIdempotent,
            format!("no op_types row for {op_type}: its receiver's contract is unknown"),
        ),
    }
}

/// What the op type's latest drill proved. A duplicate under one key (a
/// race, a crash, a lost response, keys forgotten early) means a same-key
/// retry may duplicate too: refused unless overridden with a note. Params
/// ignored on replay is told, not refused: the retry resends the same
/// params. A clean drill lifts nothing the other checks refuse.
fn drilled_check(draft: &DecisionDraft, detail: &OperationDetail) -> RuleCheck {
    let Some(drill) = &detail.drill else {
        return RuleCheck::pass(Rule::Drilled, "contract declared, never drilled");
    };
    let on = drill.drilled_on();
    if let Some(case) = &drill.duplicate_case {
        let why = drill
            .duplicate_why
            .as_deref()
            .unwrap_or("more than one effect");
        let found = format!("{on}: case {case} made a duplicate under one key ({why})");
        return if draft.override_committed && has_text(&draft.note) {
            RuleCheck::note(Rule::Drilled, format!("{found}; overridden with a note"))
        } else {
            RuleCheck::fail(
                Rule::Drilled,
                format!("{found}: a same-key retry could duplicate; override with a note"),
            )
        };
    }
    if drill.params_ignored {
        return RuleCheck::note(
            Rule::Drilled,
            format!("{on}: params ignored on replay (a same-key retry resends the same params)"),
        );
    }
    RuleCheck::pass(Rule::Drilled, format!("{on}: no duplicate under one key"))
}

fn deadline_check(detail: &OperationDetail, now: DateTime<Utc>) -> RuleCheck {
    match detail.operation.deadline_at.as_deref() {
        None => RuleCheck::pass(Rule::DeadlineNotPassed, "no deadline"),
        Some(text) => match parse_time(text) {
            Some(deadline) if deadline > now => {
                RuleCheck::pass(Rule::DeadlineNotPassed, format!("deadline {text}"))
            }
            Some(_) => RuleCheck::fail(
                Rule::DeadlineNotPassed,
                format!("deadline {text} has passed"),
            ),
            None => RuleCheck::fail(
                Rule::DeadlineNotPassed,
                format!("deadline_at {text:?} is not a time ({TIME_FORMATS})"),
            ),
        },
    }
}

/// Informational: a spent budget does not refuse a retry (ledger-v1 lets an
/// exhausted operation spend one extra attempt), but the operator is told.
fn budget_check(detail: &OperationDetail) -> RuleCheck {
    let op = &detail.operation;
    let used = detail.attempts_used();
    if spends_extra_attempt(detail) {
        RuleCheck::note(
            Rule::Budget,
            format!(
                "{used}/{} attempts used: this retry spends one extra attempt",
                op.max_attempts
            ),
        )
    } else {
        RuleCheck::pass(
            Rule::Budget,
            format!("{used}/{} attempts used", op.max_attempts),
        )
    }
}

fn retry_queued_check(detail: &OperationDetail) -> RuleCheck {
    match detail.queued_retry() {
        Some(r) => RuleCheck::pass(
            Rule::RetryStillQueued,
            format!("retry request {} is still queued", r.id),
        ),
        None => RuleCheck::fail(
            Rule::RetryStillQueued,
            "no queued retry request: a worker has claimed it or it is done",
        ),
    }
}

/// The checks `kind` would meet on `detail` at `now` if the operator gave
/// the evidence it needs: what `settle show` lists as "may be decided" and
/// what the evidence summary may suggest. Only rules, never the text, can
/// refuse here; no override is assumed.
pub fn check_kind(
    kind: DecisionKind,
    detail: &OperationDetail,
    now: DateTime<Utc>,
) -> Vec<RuleCheck> {
    let draft = DecisionDraft {
        op_id: detail.operation.id,
        kind,
        result_id: None,
        evidence: Some("(the operator's evidence)".to_string()),
        note: None,
        override_committed: false,
        operator: String::new(),
        expected_version: detail.operation.version,
        undoes: None,
    };
    check(&draft, detail, now)
}

/// Whether a `retry_same_key` on this operation spends an attempt beyond
/// `max_attempts`: the budget is used up, or the service already gave up
/// (`exhausted`). The decision transaction records it with the decision.
pub fn spends_extra_attempt(detail: &OperationDetail) -> bool {
    let op = &detail.operation;
    op.state == State::Exhausted || detail.attempts_used() >= op.max_attempts
}

/// The first failing check, which is what a refusal reports.
pub fn refusal(checks: &[RuleCheck]) -> Option<&RuleCheck> {
    checks.iter().find(|c| c.verdict.is_fail())
}

fn describe_effects(effects: &[String]) -> String {
    let named: Vec<&str> = effects
        .iter()
        .map(|e| if e.is_empty() { "(no id)" } else { e })
        .collect();
    named.join(", ")
}

fn state_check(kind: DecisionKind, detail: &OperationDetail, now: DateTime<Utc>) -> RuleCheck {
    let op = &detail.operation;
    let state = &op.state;
    match kind {
        DecisionKind::Applied | DecisionKind::NotApplied | DecisionKind::RetrySameKey => {
            if *state == State::Conflict && kind == DecisionKind::RetrySameKey {
                RuleCheck::fail(
                    Rule::StateAllows,
                    "conflict: the key was reused with different parameters; repeating an invalid request is not recovery, send a corrected request under a new key",
                )
            } else if State::QUEUE.contains(state) {
                RuleCheck::pass(Rule::StateAllows, format!("{state} is in the triage queue"))
            } else if *state == State::Reserved {
                if op.is_stale_reservation(now) {
                    RuleCheck::pass(Rule::StateAllows, "reservation is stale (lease passed)")
                } else {
                    RuleCheck::fail(
                        Rule::StateAllows,
                        format!(
                            "reservation is live until {}: it belongs to its owner",
                            op.lease_expires_at.as_deref().unwrap_or("?")
                        ),
                    )
                }
            } else if *state == State::RetryPending {
                RuleCheck::fail(
                    Rule::StateAllows,
                    "retry_pending changes only through cancel_retry or a worker",
                )
            } else if matches!(state, State::Completed | State::NotApplied) {
                RuleCheck::fail(
                    Rule::StateAllows,
                    format!("{state} changes only through reopen"),
                )
            } else {
                RuleCheck::fail(
                    Rule::StateAllows,
                    format!(
                        "state {:?} is not a ledger-v1 state; no decision applies",
                        state.as_str()
                    ),
                )
            }
        }
        DecisionKind::CancelRetry => {
            if *state == State::RetryPending {
                RuleCheck::pass(Rule::StateAllows, "retry_pending")
            } else {
                RuleCheck::fail(
                    Rule::StateAllows,
                    format!("cancel_retry needs retry_pending; the operation is {state}"),
                )
            }
        }
        DecisionKind::Reopen => RuleCheck::pass(Rule::StateAllows, format!("{state}")),
    }
}

fn key_expiry_check(detail: &OperationDetail, now: DateTime<Utc>) -> RuleCheck {
    match super::key_expiry::key_expiry(detail) {
        KeyExpiry::Never => {
            RuleCheck::pass(Rule::KeyNotExpired, "the receiver never forgets the key")
        }
        KeyExpiry::Unreadable(why) => RuleCheck::fail(Rule::KeyNotExpired, why),
        KeyExpiry::At { at, why } if at > now => RuleCheck::pass(
            Rule::KeyNotExpired,
            format!("kept until {} ({why})", format_time(at)),
        ),
        KeyExpiry::At { at, why } => RuleCheck::fail(
            Rule::KeyNotExpired,
            format!(
                "key expired at {} ({why}): the receiver may have forgotten it, a retry could duplicate",
                format_time(at)
            ),
        ),
    }
}

fn reopen_check(draft: &DecisionDraft, detail: &OperationDetail) -> RuleCheck {
    let Some(undone_id) = draft.undoes else {
        return RuleCheck::fail(Rule::NothingSince, "reopen needs the decision it undoes");
    };
    let Some(undone) = detail.decisions.iter().find(|d| d.id == undone_id) else {
        return RuleCheck::fail(
            Rule::NothingSince,
            format!(
                "decision {undone_id} is not a decision of operation {}",
                detail.operation.id
            ),
        );
    };
    if !matches!(undone.decision.as_str(), "applied" | "not_applied") {
        return RuleCheck::fail(
            Rule::NothingSince,
            format!(
                "reopen undoes applied or not_applied; decision {undone_id} is {} (use cancel_retry for a retry)",
                undone.decision
            ),
        );
    }
    // Each write bumps the version by one, so the decision left the operation
    // at op_version + 1; anything else means another write came after it.
    let written = undone.op_version + 1;
    if detail.operation.version == written {
        RuleCheck::pass(
            Rule::NothingSince,
            format!("decision {undone_id} was the last change (version {written})"),
        )
    } else {
        RuleCheck::fail(
            Rule::NothingSince,
            format!(
                "the operation changed after decision {undone_id} (version {} now, {written} then): decide again instead",
                detail.operation.version
            ),
        )
    }
}

#[cfg(test)]
mod tests;
