//! The honest analysis of a drill: effects counted from the receiver's final
//! state and cross-checked with its events, expectations recomputed rather
//! than copied, one verdict per case, and every inconsistency reported as a
//! finding instead of smoothed over. Pure: it reads a [`DrillFile`] and
//! writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use super::read::{DrillAttempt, DrillCase, DrillFile};

mod claims;
mod findings;

pub use findings::{FieldCheck, Finding, Severity};

/// What an attempt tells the caller about the effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptClass {
    /// The fault struck before any effect: nothing was applied.
    KnownNotApplied,
    /// The receiver answered with success.
    AppliedAcknowledged,
    /// Timeout or error with no proof either way. After a commit the effect
    /// exists, but the caller does not know it.
    OutcomeUnknown,
    /// The receiver refused the request as a different intent under a used
    /// key (`conflict`, `rejected_mismatch`). Nothing was applied for it.
    InvalidIntent,
}

impl AttemptClass {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptClass::KnownNotApplied => "known not applied",
            AttemptClass::AppliedAcknowledged => "applied and acknowledged",
            AttemptClass::OutcomeUnknown => "outcome unknown",
            AttemptClass::InvalidIntent => "invalid or conflicting intent",
        }
    }
}

/// The safety verdict of one case. Independent of `passed`: a case that
/// expected a duplicate and got it passed, and is still a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Safe,
    DuplicateEffect,
    /// The caller ended without knowing: budget exhausted or last outcome
    /// unknown.
    Unresolved,
    Conflict,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::DuplicateEffect => "duplicate effect",
            Verdict::Unresolved => "unresolved",
            Verdict::Conflict => "conflict",
        }
    }
}

/// One attempt, classified.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptAnalysis {
    pub attempt: i64,
    pub result: Option<String>,
    pub fault: Option<String>,
    pub class: AttemptClass,
    /// A `committed` event belongs to this attempt.
    pub committed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CaseAnalysis {
    pub case: String,
    pub strategy: Option<String>,
    pub attempts_used: usize,
    pub max_attempts: Option<i64>,
    pub budget_exhausted: bool,
    /// Effects in the final state, or committed effects when the file has no
    /// final state.
    pub effect_count: usize,
    /// Effect ids of `committed` events, in order.
    pub committed_effects: Vec<String>,
    /// Effect ids of `replayed` events, in order.
    pub replayed_effects: Vec<String>,
    /// More than one effect for one intent (same parameters).
    pub duplicate: bool,
    /// The last attempt's result; `exhausted` when it was a timeout or error
    /// that used the last attempt of the budget (as the reference drill says).
    pub caller_result: Option<String>,
    pub attempts: Vec<AttemptAnalysis>,
    pub checks: Vec<FieldCheck>,
    /// The producer's `passed`.
    pub passed_claimed: Option<bool>,
    /// `passed` recomputed from the checks; `None` without `expected`.
    pub passed_recomputed: Option<bool>,
    /// Event words outside the contract, kept as written.
    pub unknown_events: Vec<String>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub cases: Vec<CaseAnalysis>,
    pub findings: Vec<Finding>,
}

impl Analysis {
    pub fn count(&self, verdict: Verdict) -> usize {
        self.cases.iter().filter(|c| c.verdict == verdict).count()
    }
}

/// Event words of the contract; anything else is shown as written.
pub const KNOWN_EVENTS: [&str; 6] = [
    "committed",
    "replayed",
    "timeout_injected",
    "rejected_mismatch",
    "success",
    "budget_exhausted",
];

/// Analyses every case of a file.
pub fn analyse(file: &DrillFile) -> Analysis {
    let mut findings = Vec::new();
    let cases: Vec<CaseAnalysis> = file
        .cases
        .iter()
        .map(|case| analyse_case(case, &mut findings))
        .collect();
    if let Some(claimed) = file.passed {
        let all = cases
            .iter()
            .all(|c| c.passed_recomputed.or(c.passed_claimed).unwrap_or(true));
        if claimed != all {
            findings.push(Finding {
                case: None,
                severity: Severity::Warning,
                text: format!(
                    "the file says passed={claimed}, but recomputed from its cases it is {all}"
                ),
            });
        }
    }
    Analysis { cases, findings }
}

/// Classifies one attempt of `case`. Shared with the import plan so a state
/// in the ledger and a verdict on screen cannot disagree.
pub fn classify_attempt(case: &DrillCase, attempt: &DrillAttempt) -> AttemptClass {
    let rejected = case
        .events
        .iter()
        .any(|e| e.attempt == Some(attempt.attempt) && e.event == "rejected_mismatch");
    match attempt.result.as_deref() {
        Some("success") => AttemptClass::AppliedAcknowledged,
        Some("conflict") => AttemptClass::InvalidIntent,
        _ if rejected => AttemptClass::InvalidIntent,
        // A fault injected before the effect is the one case where a failed
        // call is known not to have written anything.
        _ if attempt.fault.as_deref() == Some("before_effect") => AttemptClass::KnownNotApplied,
        _ => AttemptClass::OutcomeUnknown,
    }
}

/// The caller's final word, recomputed: see [`CaseAnalysis::caller_result`].
pub fn caller_result(case: &DrillCase) -> Option<String> {
    let last = case.attempts.last()?;
    let result = last.result.clone()?;
    let failed = matches!(result.as_str(), "timeout" | "error");
    let budget_spent = case
        .max_attempts
        .is_some_and(|max| case.attempts.len() as i64 >= max);
    let budget_event = case.events.iter().any(|e| e.event == "budget_exhausted");
    Some(if failed && (budget_spent || budget_event) {
        "exhausted".to_string()
    } else {
        result
    })
}

/// One case, step by step: what its attempts show, what its effects show,
/// whether its own claims hold, and its verdict. Each step adds its findings
/// in turn, so their order on screen follows these steps.
fn analyse_case(case: &DrillCase, findings: &mut Vec<Finding>) -> CaseAnalysis {
    let mut note = |severity, text: String| {
        findings.push(Finding {
            case: Some(case.case.clone()),
            severity,
            text,
        })
    };
    let committed_effects = effect_ids(case, "committed");
    let replayed_effects = effect_ids(case, "replayed");
    let attempts = classify_attempts(case);

    let effect_count = count_effects(case, &committed_effects, &replayed_effects, &mut note);
    let duplicate = duplicate_effects(case, &committed_effects, &mut note);
    note_retry_anomalies(case, &attempts, &mut note);

    let caller_result = caller_result(case);
    let recomputed = claims::Recomputed {
        effect_count,
        attempt_count: case.attempts.len(),
        caller_result: caller_result.as_deref(),
    };
    let checks = claims::check_expectations(case, &recomputed, &mut note);
    let passed_recomputed = claims::recompute_passed(case, &checks, &mut note);
    let unknown_events = unknown_events(case, &mut note);

    let budget_exhausted = caller_result.as_deref() == Some("exhausted");
    let verdict = decide_verdict(case, &attempts, duplicate, budget_exhausted, &mut note);

    CaseAnalysis {
        case: case.case.clone(),
        strategy: case.strategy.clone(),
        attempts_used: case.attempts.len(),
        max_attempts: case.max_attempts,
        budget_exhausted,
        effect_count,
        committed_effects,
        replayed_effects,
        duplicate,
        caller_result,
        attempts,
        checks,
        passed_claimed: case.passed,
        passed_recomputed,
        unknown_events,
        verdict,
    }
}

/// Effect ids of the case's `word` events (`committed`, `replayed`), in order.
fn effect_ids(case: &DrillCase, word: &str) -> Vec<String> {
    case.events
        .iter()
        .filter(|e| e.event == word)
        .map(|e| e.effect_id().unwrap_or_default())
        .collect()
}

/// What each attempt tells the caller, and whether it committed an effect.
fn classify_attempts(case: &DrillCase) -> Vec<AttemptAnalysis> {
    case.attempts
        .iter()
        .map(|a| AttemptAnalysis {
            attempt: a.attempt,
            result: a.result.clone(),
            fault: a.fault.clone(),
            class: classify_attempt(case, a),
            committed: case
                .events
                .iter()
                .any(|e| e.attempt == Some(a.attempt) && e.event == "committed"),
        })
        .collect()
}

/// How many effects exist. The receiver's final state is the truth about
/// what exists; the events are the cross-check, and every place they
/// disagree with it (or a replay of an effect never committed) is a finding.
fn count_effects(
    case: &DrillCase,
    committed: &[String],
    replayed: &[String],
    note: &mut impl FnMut(Severity, String),
) -> usize {
    let committed_set: BTreeSet<&str> = committed.iter().map(String::as_str).collect();
    let effect_count = match &case.final_state {
        Some(state) => {
            let final_ids: BTreeSet<&str> = state
                .effects
                .iter()
                .filter_map(|e| e.id.as_deref())
                .collect();
            if state.effects.len() != committed.len() || final_ids != committed_set {
                note(
                    Severity::Warning,
                    format!(
                        "events and final state disagree: {} committed event(s) [{}], {} effect(s) in the final state [{}]",
                        committed.len(),
                        committed.join(", "),
                        state.effects.len(),
                        state
                            .effects
                            .iter()
                            .map(|e| e.id.as_deref().unwrap_or("?"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            state.effects.len()
        }
        None => {
            note(
                Severity::Note,
                "no final_state: effects counted from committed events only".to_string(),
            );
            committed.len()
        }
    };
    for id in replayed {
        if !committed_set.contains(id.as_str()) {
            note(
                Severity::Warning,
                format!("replayed effect {id} that no committed event created"),
            );
        }
    }
    effect_count
}

/// How the caller retried, where it matters: an effect committed behind a
/// timeout or error, a key that changed between attempts (which turns a
/// retry into a new request), more attempts than the budget allows.
fn note_retry_anomalies(
    case: &DrillCase,
    attempts: &[AttemptAnalysis],
    note: &mut impl FnMut(Severity, String),
) {
    for a in attempts {
        if a.class == AttemptClass::OutcomeUnknown && a.committed {
            note(
                Severity::Note,
                format!(
                    "attempt {}: {} after the effect was committed: the effect exists but the caller did not know",
                    a.attempt,
                    a.result.as_deref().unwrap_or("no result")
                ),
            );
        }
    }
    let keys: BTreeSet<&str> = case
        .attempts
        .iter()
        .filter_map(|a| a.key.as_deref())
        .collect();
    if keys.len() > 1 {
        note(
            Severity::Warning,
            format!(
                "attempts used {} different keys ({}): the receiver cannot tell a retry from a new request",
                keys.len(),
                keys.into_iter().collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let attempts_used = case.attempts.len();
    if let Some(max) = case.max_attempts
        && attempts_used as i64 > max
    {
        note(
            Severity::Warning,
            format!("used {attempts_used} attempts of a budget of {max}"),
        );
    }
}

/// Event words outside the contract, kept as written; each distinct one is
/// noted once.
fn unknown_events(case: &DrillCase, note: &mut impl FnMut(Severity, String)) -> Vec<String> {
    let unknown: Vec<String> = case
        .events
        .iter()
        .filter(|e| !KNOWN_EVENTS.contains(&e.event.as_str()))
        .map(|e| e.event.clone())
        .collect();
    for word in unknown.iter().collect::<BTreeSet<_>>() {
        note(
            Severity::Note,
            format!("event word `{word}` is not in the contract: kept as written"),
        );
    }
    unknown
}

/// The case's verdict, with the finding that explains it. The worst thing
/// that happened wins: a duplicate is harm done whatever the caller believed,
/// a conflict means a request was refused, and only then does it matter
/// whether the caller ended knowing the outcome.
fn decide_verdict(
    case: &DrillCase,
    attempts: &[AttemptAnalysis],
    duplicate: bool,
    budget_exhausted: bool,
    note: &mut impl FnMut(Severity, String),
) -> Verdict {
    if duplicate {
        if case.passed == Some(true) {
            note(
                Severity::Error,
                "passed only because it expected this duplicate: passing is not safety".to_string(),
            );
        }
        return Verdict::DuplicateEffect;
    }
    if let Some(refused) = attempts
        .iter()
        .find(|a| a.class == AttemptClass::InvalidIntent)
    {
        note(
            Severity::Warning,
            format!(
                "conflict: attempt {} was refused as a different intent under a used key; nothing was applied for it",
                refused.attempt
            ),
        );
        return Verdict::Conflict;
    }
    let last_class = attempts.last().map(|a| a.class);
    if budget_exhausted || last_class != Some(AttemptClass::AppliedAcknowledged) {
        note(
            Severity::Warning,
            unresolved_reason(case, attempts, budget_exhausted),
        );
        return Verdict::Unresolved;
    }
    Verdict::Safe
}

/// Why the caller ended without knowing: a spent budget, or a last attempt
/// with no acknowledged result.
fn unresolved_reason(
    case: &DrillCase,
    attempts: &[AttemptAnalysis],
    budget_exhausted: bool,
) -> String {
    if budget_exhausted {
        let all_known = attempts
            .iter()
            .all(|a| a.class == AttemptClass::KnownNotApplied);
        return format!(
            "unresolved: the budget of {} attempt(s) is spent without an acknowledged result{}",
            case.max_attempts
                .map(|m| m.to_string())
                .unwrap_or_else(|| "?".into()),
            if all_known {
                "; every attempt failed before any effect"
            } else {
                ""
            }
        );
    }
    match attempts.last() {
        Some(a) => format!(
            "unresolved: the last attempt ended in {}: the caller does not know whether it applied",
            a.result.as_deref().unwrap_or("no result")
        ),
        None => "unresolved: no attempts recorded".to_string(),
    }
}

/// More than one effect for one intent. Effects in the final state are
/// grouped by their parameters (one intent = one set of parameters; an
/// effect without parameters belongs to the case's operation); distinct
/// committed effect ids count too, so a final state that lost an effect does
/// not hide a duplicate the events show.
fn duplicate_effects(
    case: &DrillCase,
    committed: &[String],
    note: &mut impl FnMut(Severity, String),
) -> bool {
    let operation_params = case.operation.as_ref().and_then(|op| op.params.as_ref());
    let mut by_intent: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    if let Some(state) = &case.final_state {
        for effect in &state.effects {
            let intent = effect
                .params
                .as_ref()
                .or(operation_params)
                .map(super::canonical::canonical_json)
                .unwrap_or_default();
            by_intent
                .entry(intent)
                .or_default()
                .push(effect.id.as_deref().unwrap_or("?"));
        }
    }
    let mut duplicate = false;
    for ids in by_intent.values().filter(|ids| ids.len() > 1) {
        duplicate = true;
        note(
            Severity::Error,
            format!(
                "duplicate effect: {} effects for one intent ({})",
                ids.len(),
                ids.join(", ")
            ),
        );
    }
    let distinct_committed: BTreeSet<&str> = committed.iter().map(String::as_str).collect();
    if !duplicate && distinct_committed.len() > 1 && by_intent.len() <= 1 {
        duplicate = true;
        note(
            Severity::Error,
            format!(
                "duplicate effect: events show {} commits ({}) for one operation",
                distinct_committed.len(),
                distinct_committed
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    duplicate
}

#[cfg(test)]
mod tests;
