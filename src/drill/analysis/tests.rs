//! Every verdict and every finding the analysis can produce, each from the
//! smallest drill case that shows it, read through the real reader so the
//! inputs look like the files producers write.

use std::path::Path;

use serde_json::{Value, json};

use super::{Analysis, AttemptClass, CaseAnalysis, Finding, Severity, Verdict, analyse};

fn analyse_cases(file: Value) -> Analysis {
    let file = crate::drill::read::parse(Path::new("drill.json"), &file.to_string()).unwrap();
    analyse(&file)
}

/// One case, analysed; its findings beside it.
fn one(case: Value) -> (CaseAnalysis, Vec<Finding>) {
    let mut analysis = analyse_cases(json!({ "cases": [case] }));
    (analysis.cases.remove(0), analysis.findings)
}

fn attempt(n: i64, result: &str) -> Value {
    json!({ "attempt": n, "key": "k-1", "result": result })
}

fn event(attempt: i64, word: &str, effect: Option<&str>) -> Value {
    match effect {
        Some(id) => json!({ "attempt": attempt, "event": word, "effect_id": id }),
        None => json!({ "attempt": attempt, "event": word }),
    }
}

fn effects(ids: &[&str]) -> Value {
    json!({ "effects": ids.iter().map(|id| json!({ "id": id, "key": "k-1" })).collect::<Vec<_>>() })
}

/// One attempt, acknowledged, one effect: nothing to say.
fn safe() -> Value {
    json!({
        "case": "safe",
        "max_attempts": 3,
        "attempts": [attempt(1, "success")],
        "events": [event(1, "committed", Some("e1"))],
        "final_state": effects(&["e1"]),
    })
}

fn with(mut case: Value, field: &str, value: Value) -> Value {
    case[field] = value;
    case
}

/// The finding whose text contains `text`; fails with every finding shown.
fn finding<'a>(findings: &'a [Finding], text: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.text.contains(text))
        .unwrap_or_else(|| panic!("no finding with {text:?} in {findings:#?}"))
}

#[test]
fn an_acknowledged_single_effect_is_safe_and_says_nothing() {
    let (case, findings) = one(safe());
    assert_eq!(case.verdict, Verdict::Safe);
    assert_eq!(case.effect_count, 1);
    assert_eq!(case.caller_result.as_deref(), Some("success"));
    assert_eq!(case.attempts[0].class, AttemptClass::AppliedAcknowledged);
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn a_timeout_after_the_commit_then_a_success_is_safe_but_noted() {
    let (case, findings) = one(with(
        with(
            safe(),
            "attempts",
            json!([attempt(1, "timeout"), attempt(2, "success")]),
        ),
        "events",
        json!([
            event(1, "committed", Some("e1")),
            event(2, "replayed", Some("e1"))
        ]),
    ));
    assert_eq!(case.verdict, Verdict::Safe);
    assert_eq!(case.attempts[0].class, AttemptClass::OutcomeUnknown);
    assert!(case.attempts[0].committed);
    let f = finding(
        &findings,
        "attempt 1: timeout after the effect was committed",
    );
    assert_eq!(f.severity, Severity::Note);
    assert_eq!(f.case.as_deref(), Some("safe"));
    assert_eq!(findings.len(), 1, "{findings:#?}");
}

#[test]
fn two_effects_for_one_intent_are_a_duplicate_whatever_the_file_claims() {
    let case = with(
        with(
            safe(),
            "attempts",
            json!([attempt(1, "timeout"), attempt(2, "success")]),
        ),
        "events",
        json!([
            event(1, "committed", Some("e1")),
            event(2, "committed", Some("e2"))
        ]),
    );
    let case = with(
        with(case, "final_state", effects(&["e1", "e2"])),
        "passed",
        json!(true),
    );
    let (case, findings) = one(case);
    assert_eq!(case.verdict, Verdict::DuplicateEffect);
    assert!(case.duplicate);
    assert_eq!(case.effect_count, 2);
    assert_eq!(
        finding(
            &findings,
            "duplicate effect: 2 effects for one intent (e1, e2)"
        )
        .severity,
        Severity::Error
    );
    assert_eq!(
        finding(&findings, "passing is not safety").severity,
        Severity::Error
    );
}

#[test]
fn commits_the_final_state_lost_still_count_as_a_duplicate() {
    let case = with(
        safe(),
        "events",
        json!([
            event(1, "committed", Some("e1")),
            event(1, "committed", Some("e2"))
        ]),
    );
    let (case, findings) = one(case);
    assert_eq!(case.verdict, Verdict::DuplicateEffect);
    finding(
        &findings,
        "events show 2 commits (e1, e2) for one operation",
    );
    let f = finding(&findings, "events and final state disagree");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.text
            .contains("2 committed event(s) [e1, e2], 1 effect(s) in the final state [e1]"),
        "{}",
        f.text
    );
}

#[test]
fn effects_with_different_parameters_are_different_intents() {
    let final_state = json!({ "effects": [
        { "id": "e1", "params": { "week": "W45" } },
        { "id": "e2", "params": { "week": "W46" } },
    ]});
    let case = with(
        with(safe(), "final_state", final_state),
        "events",
        json!([
            event(1, "committed", Some("e1")),
            event(1, "committed", Some("e2"))
        ]),
    );
    let (case, _) = one(case);
    assert_eq!(case.verdict, Verdict::Safe);
    assert_eq!(case.effect_count, 2);
}

#[test]
fn a_refused_intent_is_a_conflict() {
    for (how, case) in [
        (
            "result conflict",
            with(safe(), "attempts", json!([attempt(1, "conflict")])),
        ),
        (
            "rejected_mismatch event",
            with(
                with(safe(), "attempts", json!([attempt(1, "error")])),
                "events",
                json!([event(1, "rejected_mismatch", None)]),
            ),
        ),
    ] {
        let (case, findings) = one(with(case, "final_state", effects(&[])));
        assert_eq!(case.verdict, Verdict::Conflict, "{how}");
        assert_eq!(case.attempts[0].class, AttemptClass::InvalidIntent, "{how}");
        finding(
            &findings,
            "conflict: attempt 1 was refused as a different intent",
        );
    }
}

#[test]
fn a_spent_budget_is_unresolved_and_says_whether_anything_was_written() {
    let failed_before =
        json!({ "attempt": 1, "key": "k-1", "result": "error", "fault": "before_effect" });
    let case = with(
        with(
            with(safe(), "max_attempts", json!(1)),
            "attempts",
            json!([failed_before]),
        ),
        "events",
        json!([]),
    );
    let (case, findings) = one(with(case, "final_state", effects(&[])));
    assert_eq!(case.verdict, Verdict::Unresolved);
    assert!(case.budget_exhausted);
    assert_eq!(case.caller_result.as_deref(), Some("exhausted"));
    assert_eq!(case.attempts[0].class, AttemptClass::KnownNotApplied);
    finding(
        &findings,
        "the budget of 1 attempt(s) is spent without an acknowledged result; every attempt failed before any effect",
    );
}

#[test]
fn a_budget_exhausted_event_makes_the_last_timeout_exhausted() {
    let case = with(
        with(safe(), "attempts", json!([attempt(1, "timeout")])),
        "events",
        json!([
            event(1, "committed", Some("e1")),
            event(1, "budget_exhausted", None)
        ]),
    );
    let (case, findings) = one(case);
    assert_eq!(case.caller_result.as_deref(), Some("exhausted"));
    assert_eq!(case.verdict, Verdict::Unresolved);
    let f = finding(&findings, "unresolved: the budget of 3 attempt(s) is spent");
    assert!(!f.text.contains("before any effect"), "{}", f.text);
}

#[test]
fn a_last_timeout_within_the_budget_is_unresolved() {
    let (case, findings) = one(with(safe(), "attempts", json!([attempt(1, "timeout")])));
    assert_eq!(case.verdict, Verdict::Unresolved);
    assert_eq!(case.caller_result.as_deref(), Some("timeout"));
    finding(
        &findings,
        "the last attempt ended in timeout: the caller does not know whether it applied",
    );

    let (case, findings) = one(with(
        with(safe(), "attempts", json!([])),
        "events",
        json!([]),
    ));
    assert_eq!(case.verdict, Verdict::Unresolved);
    finding(&findings, "unresolved: no attempts recorded");
}

#[test]
fn claims_that_contradict_the_file_are_findings() {
    let case = with(
        with(
            safe(),
            "expected",
            json!({ "effect_count": 2, "attempt_count": 1, "colour": "red" }),
        ),
        "observed",
        json!({ "effect_count": 2, "caller_result": "success" }),
    );
    let (case, findings) = one(with(case, "passed", json!(true)));
    finding(&findings, "observed effect_count = 2, but the file shows 1");
    finding(&findings, "expected effect_count = 2, got 1");
    finding(
        &findings,
        "the file says passed=true, recomputed it is false",
    );
    assert_eq!(case.passed_recomputed, Some(false));
    // A field the analysis cannot compute falls back to what was observed,
    // or holds when nothing was observed.
    let colour = case.checks.iter().find(|c| c.field == "colour").unwrap();
    assert_eq!((colour.recomputed.clone(), colour.holds()), (None, None));
    // A correct observation is not a finding.
    assert!(
        !findings.iter().any(|f| f.text.contains("caller_result")),
        "{findings:#?}"
    );
}

#[test]
fn a_file_level_passed_is_recomputed_from_its_cases() {
    let failing = with(safe(), "expected", json!({ "effect_count": 0 }));
    let analysis = analyse_cases(json!({ "passed": true, "cases": [safe(), failing] }));
    let f = finding(
        &analysis.findings,
        "the file says passed=true, but recomputed from its cases it is false",
    );
    assert_eq!((f.case.clone(), f.severity), (None, Severity::Warning));
    assert_eq!(analysis.count(Verdict::Safe), 2);

    let honest = analyse_cases(json!({ "passed": true, "cases": [safe()] }));
    assert!(honest.findings.is_empty(), "{:#?}", honest.findings);
}

#[test]
fn inconsistent_history_is_reported_not_smoothed_over() {
    let mut case = safe();
    case["attempts"] = json!([
        attempt(1, "timeout"),
        { "attempt": 2, "key": "k-2", "result": "timeout" },
        attempt(3, "success"),
    ]);
    case["max_attempts"] = json!(2);
    case["events"] = json!([
        event(1, "committed", Some("e1")),
        event(3, "replayed", Some("e9")),
        event(3, "teleported", None),
        event(3, "teleported", None),
    ]);
    let (case, findings) = one(case);
    finding(&findings, "attempts used 2 different keys (k-1, k-2)");
    finding(&findings, "used 3 attempts of a budget of 2");
    finding(
        &findings,
        "replayed effect e9 that no committed event created",
    );
    let unknown = finding(&findings, "event word `teleported` is not in the contract");
    assert_eq!(unknown.severity, Severity::Note);
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.text.contains("teleported"))
            .count(),
        1,
        "one finding per unknown word"
    );
    assert_eq!(case.unknown_events, ["teleported", "teleported"]);
}

#[test]
fn without_a_final_state_effects_are_counted_from_commits() {
    let mut case = safe();
    case.as_object_mut().unwrap().remove("final_state");
    let (case, findings) = one(case);
    assert_eq!(case.effect_count, 1);
    assert_eq!(case.verdict, Verdict::Safe);
    assert_eq!(
        finding(
            &findings,
            "no final_state: effects counted from committed events only"
        )
        .severity,
        Severity::Note
    );
}

#[test]
fn verdict_and_class_words_are_what_the_report_prints() {
    assert_eq!(
        [
            Verdict::Safe,
            Verdict::DuplicateEffect,
            Verdict::Unresolved,
            Verdict::Conflict
        ]
        .map(Verdict::as_str),
        ["safe", "duplicate effect", "unresolved", "conflict"]
    );
    assert_eq!(AttemptClass::OutcomeUnknown.as_str(), "outcome unknown");
}
