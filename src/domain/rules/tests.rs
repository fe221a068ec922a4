//! The decision rules judged on plain domain values (no ledger, no clock):
//! the fixtures every test starts from, the table of one row per rule and
//! kind in [`table`], and the checks' order, refusal and target states here.

use chrono::{DateTime, Utc};

use super::{Rule, Verdict, check, check_kind, refusal, target_state};
use crate::domain::decision::{Decision, DecisionDraft, DecisionKind};
use crate::domain::fixture;
use crate::domain::ids::{DecisionId, OperationId};
use crate::domain::operation::{Attempt, Event, Operation, OperationDetail, Outcome, RetryRequest};
use crate::domain::state::State;
use crate::domain::time::parse_time;

const NOW: &str = "2026-11-06T12:00:00Z";

fn now() -> DateTime<Utc> {
    parse_time(NOW).unwrap()
}

/// An `unknown` operation with one timed-out attempt of three, an
/// idempotent receiver that never forgets keys, no deadline and no events:
/// every kind that can apply to it passes every rule. Rows change one thing.
fn detail() -> OperationDetail {
    OperationDetail {
        operation: Operation {
            id: OperationId(7),
            fingerprint: "sha256:9f2c".into(),
            updated_at: "2026-11-06T10:00:30Z".into(),
            ..fixture::operation()
        },
        attempts: vec![Attempt {
            op_id: OperationId(7),
            attempt: 1,
            started_at: "2026-11-06T10:00:00Z".into(),
            ended_at: Some("2026-11-06T10:00:30Z".into()),
            outcome: Outcome::Timeout,
            error: Some("read timeout".into()),
            response: None,
        }],
        ..fixture::detail(fixture::operation())
    }
}

fn draft(kind: DecisionKind) -> DecisionDraft {
    DecisionDraft {
        op_id: OperationId(7),
        kind,
        result_id: None,
        evidence: Some("provider portal shows no report".into()),
        note: None,
        override_committed: false,
        operator: "alice".into(),
        expected_version: 1,
        undoes: None,
    }
}

fn committed(effect: &str) -> Event {
    Event {
        id: 1,
        op_id: OperationId(7),
        attempt: Some(1),
        at: "2026-11-06T10:00:02Z".into(),
        event: "committed".into(),
        detail: Some(format!(r#"{{"effect_id":"{effect}"}}"#)),
    }
}

/// A decision of `kind` taken at operation version `op_version`, from
/// `from_state`, as the ledger would hold it.
fn decided(id: i64, kind: &str, from_state: &str, op_version: i64) -> Decision {
    Decision {
        id: DecisionId(id),
        op_id: OperationId(7),
        decision: kind.into(),
        from_state: from_state.into(),
        to_state: "completed".into(),
        result_id: None,
        evidence: Some("ticket 4411".into()),
        note: None,
        operator: "bob".into(),
        decided_at: "2026-11-06T11:00:00Z".into(),
        op_version,
        undoes: None,
    }
}

/// `retry_pending` after a `retry_same_key` decision (id 3) whose request
/// (id 9) has `status`.
fn retry_pending(d: &mut OperationDetail, status: &str) {
    d.operation.state = State::RetryPending;
    d.operation.version = 2;
    d.decisions = vec![decided(3, "retry_same_key", "exhausted", 1)];
    d.retry_requests = vec![RetryRequest {
        id: 9,
        op_id: OperationId(7),
        idem_key: "k-1".into(),
        requested_at: "2026-11-06T11:00:00Z".into(),
        requested_by: "bob".into(),
        status: status.into(),
        decision_id: DecisionId(3),
        progress: Default::default(),
    }];
}

/// `completed` by an `applied` decision (id 4) taken at version 1.
fn completed_by_decision(d: &mut OperationDetail, dr: &mut DecisionDraft) {
    d.operation.state = State::Completed;
    d.operation.version = 2;
    d.decisions = vec![decided(4, "applied", "unknown", 1)];
    dr.undoes = Some(DecisionId(4));
}

mod table;

#[test]
fn the_form_shows_the_checks_of_each_kind_in_order() {
    let rules = |kind| -> Vec<Rule> {
        check(&draft(kind), &detail(), now())
            .iter()
            .map(|c| c.rule)
            .collect()
    };
    use Rule::*;
    assert_eq!(rules(DecisionKind::Applied), [StateAllows, EvidenceGiven]);
    assert_eq!(
        rules(DecisionKind::NotApplied),
        [StateAllows, EvidenceGiven, CommittedEffect]
    );
    assert_eq!(
        rules(DecisionKind::RetrySameKey),
        [
            StateAllows,
            ContractIdempotent,
            Drilled,
            KeyNotExpired,
            DeadlineNotPassed,
            Budget
        ]
    );
    assert_eq!(
        rules(DecisionKind::CancelRetry),
        [StateAllows, RetryStillQueued]
    );
    assert_eq!(rules(DecisionKind::Reopen), [StateAllows, NothingSince]);
}

#[test]
fn the_refusal_is_the_first_failing_check() {
    // Not idempotent and past its deadline: the operator is told about the
    // contract first, as the form lists it.
    let mut d = detail();
    d.operation.deadline_at = Some("2026-11-06T11:00:00Z".into());
    if let Some(c) = d.contract.as_mut() {
        c.idempotent = false;
    }
    let checks = check(&draft(DecisionKind::RetrySameKey), &d, now());
    assert_eq!(checks.iter().filter(|c| c.verdict.is_fail()).count(), 2);
    assert_eq!(
        refusal(&checks).map(|c| c.rule),
        Some(Rule::ContractIdempotent)
    );
}

#[test]
fn may_be_decided_assumes_evidence_but_never_an_override() {
    let mut d = detail();
    let allowed = |d: &OperationDetail, kind| refusal(&check_kind(kind, d, now())).is_none();
    assert!(allowed(&d, DecisionKind::Applied));
    assert!(allowed(&d, DecisionKind::NotApplied));
    assert!(allowed(&d, DecisionKind::RetrySameKey));
    assert!(!allowed(&d, DecisionKind::CancelRetry));
    d.events = vec![committed("report-1")];
    assert!(allowed(&d, DecisionKind::Applied));
    assert!(!allowed(&d, DecisionKind::NotApplied));
}

#[test]
fn each_decision_names_the_state_it_leads_to() {
    let d = detail();
    let to = |d: &OperationDetail, dr: &DecisionDraft| target_state(dr, d);
    assert_eq!(
        to(&d, &draft(DecisionKind::Applied)),
        Some(State::Completed)
    );
    assert_eq!(
        to(&d, &draft(DecisionKind::NotApplied)),
        Some(State::NotApplied)
    );
    assert_eq!(
        to(&d, &draft(DecisionKind::RetrySameKey)),
        Some(State::RetryPending)
    );

    // Cancelling a retry goes back to where the retry was decided from.
    let mut pending = detail();
    let mut dr = draft(DecisionKind::CancelRetry);
    retry_pending(&mut pending, "queued");
    assert_eq!(to(&pending, &dr), Some(State::Exhausted));
    retry_pending(&mut pending, "claimed");
    assert_eq!(to(&pending, &dr), None);

    // Reopening goes back to the state before the undone decision.
    let mut done = detail();
    dr = draft(DecisionKind::Reopen);
    assert_eq!(to(&done, &dr), None);
    completed_by_decision(&mut done, &mut dr);
    assert_eq!(to(&done, &dr), Some(State::Unknown));
}

/// A probe is evidence for the operator, never a ruling: the receiver
/// saying "no record of this key" does not outweigh a `committed` event in
/// the ledger. `not_applied` citing the probe is still refused until it is
/// overridden with a note.
#[test]
fn a_not_found_probe_does_not_lift_the_committed_effect_rule() {
    use crate::domain::probe::{NewProbe, Probe, ProbeOutcome};
    let mut d = detail();
    d.events.push(committed("report-1"));
    d.probes.push(Probe {
        id: 1,
        probe: NewProbe {
            op_id: OperationId(7),
            idem_key: "k-1".into(),
            command: "/bin/lookup".into(),
            outcome: ProbeOutcome::NotFound,
            result_id: None,
            exit: "exit 3".into(),
            output: None,
            operator: "alice".into(),
            probed_at: NOW.into(),
            duration_ms: 5,
        },
    });
    let mut dr = DecisionDraft {
        evidence: Some("probe 1: the receiver has no record of the key".into()),
        ..draft(DecisionKind::NotApplied)
    };
    let refused = refusal(&check(&dr, &d, now())).cloned();
    assert_eq!(refused.map(|c| c.rule), Some(Rule::CommittedEffect));

    dr.override_committed = true;
    dr.note = Some("provider confirms the commit was rolled back".into());
    let checks = check(&dr, &d, now());
    assert_eq!(refusal(&checks), None);
    assert!(
        checks
            .iter()
            .any(|c| c.rule == Rule::CommittedEffect && matches!(c.verdict, Verdict::Note(_)))
    );
}

fn drilled(duplicate: Option<&str>, params_ignored: bool) -> crate::domain::DrillVerdict {
    crate::domain::DrillVerdict {
        id: 1,
        op_type: "create_report".into(),
        run: "20261201T120000000".into(),
        drilled_at: "2026-12-01T12:00:00+00:00".into(),
        results: "out/drill-20261201T120000000/drill-results.json".into(),
        duplicate_case: duplicate.map(str::to_string),
        duplicate_why: duplicate.map(|_| "2 effects under key k".to_string()),
        params_ignored,
        flaws: String::new(),
        operator: "alice".into(),
    }
}

#[test]
fn a_drill_that_found_a_duplicate_refuses_a_same_key_retry_unless_overridden() {
    let verdict = |d: &OperationDetail, dr: &DecisionDraft| {
        check(dr, d, now())
            .into_iter()
            .find(|c| c.rule == Rule::Drilled)
            .map(|c| c.verdict)
            .unwrap()
    };
    let mut d = detail();
    let mut dr = draft(DecisionKind::RetrySameKey);
    assert_eq!(
        verdict(&d, &dr),
        Verdict::Pass("contract declared, never drilled".into())
    );
    d.drill = Some(drilled(Some("concurrent_same_key"), false));
    let refused = verdict(&d, &dr);
    assert!(refused.is_fail(), "{refused:?}");
    assert!(
        refused.text().contains("concurrent_same_key"),
        "{refused:?}"
    );
    assert!(
        refused.text().contains("run 20261201T120000000"),
        "{refused:?}"
    );
    dr.override_committed = true;
    dr.note = Some("the race was fixed in v2".into());
    assert!(matches!(verdict(&d, &dr), Verdict::Note(t) if t.contains("overridden")));

    // Params ignored on replay is told, never refused: the retry resends
    // the same params. A clean drill lifts nothing.
    let dr = draft(DecisionKind::RetrySameKey);
    d.drill = Some(drilled(None, true));
    assert!(matches!(verdict(&d, &dr), Verdict::Note(t) if t.contains("params ignored")));
    d.drill = Some(drilled(None, false));
    assert!(matches!(verdict(&d, &dr), Verdict::Pass(t) if t.starts_with("drilled on 2026-12-01")));
    d.contract = None;
    assert!(check(&dr, &d, now()).iter().any(|c| c.verdict.is_fail()));
}
