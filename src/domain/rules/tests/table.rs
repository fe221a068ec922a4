//! One row per rule and decision kind: what the operator asks for, on which
//! operation, and whether the ledger lets it through or refuses it with
//! which reason.

use super::{committed, completed_by_decision, detail, draft, now, retry_pending};
use crate::domain::decision::{DecisionDraft, DecisionKind};
use crate::domain::ids::DecisionId;
use crate::domain::malformed::Malformed;
use crate::domain::operation::{Attempt, OperationDetail};
use crate::domain::rules::{Rule, RuleCheck, Verdict, check, refusal};
use crate::domain::state::State;

/// What the operator meets.
#[derive(Debug)]
enum Expect {
    /// Allowed, and `rule` says something containing the text.
    Allowed(Rule, &'static str),
    /// Allowed, with a note under `rule` (shown, does not block).
    Noted(Rule, &'static str),
    /// Refused: the first failing check is `rule` and its reason contains
    /// the text.
    Refused(Rule, &'static str),
}

type Setup = fn(&mut OperationDetail, &mut DecisionDraft);

struct Row {
    name: &'static str,
    kind: DecisionKind,
    setup: Setup,
    expect: Expect,
}

fn row(name: &'static str, kind: DecisionKind, setup: Setup, expect: Expect) -> Row {
    Row {
        name,
        kind,
        setup,
        expect,
    }
}

fn rows() -> Vec<Row> {
    use DecisionKind::*;
    use Expect::*;
    use Rule::*;
    vec![
        // StateAllows, for every kind.
        row(
            "applied on unknown",
            Applied,
            |_, _| {},
            Allowed(StateAllows, "unknown is in the triage queue"),
        ),
        row(
            "applied on exhausted",
            Applied,
            |d, _| d.operation.state = State::Exhausted,
            Allowed(StateAllows, "exhausted is in the triage queue"),
        ),
        row(
            "applied on conflict",
            Applied,
            |d, _| d.operation.state = State::Conflict,
            Allowed(StateAllows, "conflict is in the triage queue"),
        ),
        row(
            "applied on a stale reservation",
            Applied,
            |d, _| {
                d.operation.state = State::Reserved;
                d.operation.lease_expires_at = Some("2026-11-06T11:00:00Z".into());
            },
            Allowed(StateAllows, "stale"),
        ),
        row(
            "applied on a reservation without a lease",
            Applied,
            |d, _| d.operation.state = State::Reserved,
            Allowed(StateAllows, "stale"),
        ),
        row(
            "applied on a live reservation",
            Applied,
            |d, _| {
                d.operation.state = State::Reserved;
                d.operation.lease_expires_at = Some("2026-11-06T12:05:00Z".into());
            },
            Refused(
                StateAllows,
                "live until 2026-11-06T12:05:00Z: it belongs to its owner",
            ),
        ),
        row(
            "applied on completed",
            Applied,
            |d, _| d.operation.state = State::Completed,
            Refused(StateAllows, "completed changes only through reopen"),
        ),
        row(
            "not_applied on not_applied",
            NotApplied,
            |d, _| d.operation.state = State::NotApplied,
            Refused(StateAllows, "not_applied changes only through reopen"),
        ),
        row(
            "not_applied on retry_pending",
            NotApplied,
            |d, _| retry_pending(d, "queued"),
            Refused(StateAllows, "cancel_retry or a worker"),
        ),
        row(
            "applied on a word outside the contract",
            Applied,
            |d, _| d.operation.state = State::parse("weird_state"),
            Refused(StateAllows, "not a ledger-v1 state"),
        ),
        row(
            "retry on conflict",
            RetrySameKey,
            |d, _| d.operation.state = State::Conflict,
            Refused(StateAllows, "send a corrected request under a new key"),
        ),
        row(
            "cancel_retry on unknown",
            CancelRetry,
            |_, _| {},
            Refused(
                StateAllows,
                "cancel_retry needs retry_pending; the operation is unknown",
            ),
        ),
        row(
            "reopen on unknown with nothing to undo",
            Reopen,
            |_, _| {},
            Refused(NothingSince, "reopen needs the decision it undoes"),
        ),
        // EvidenceGiven.
        row(
            "applied with a result id only",
            Applied,
            |_, dr| {
                dr.evidence = None;
                dr.result_id = Some("report-1".into());
            },
            Allowed(EvidenceGiven, "result id or evidence given"),
        ),
        row(
            "applied with nothing",
            Applied,
            |_, dr| dr.evidence = None,
            Refused(EvidenceGiven, "applied needs a result id or evidence text"),
        ),
        row(
            "applied with blank evidence",
            Applied,
            |_, dr| dr.evidence = Some("  \t ".into()),
            Refused(EvidenceGiven, "applied needs a result id or evidence text"),
        ),
        row(
            "not_applied with evidence",
            NotApplied,
            |_, _| {},
            Allowed(EvidenceGiven, "evidence given"),
        ),
        row(
            "not_applied with a result id but no evidence",
            NotApplied,
            |_, dr| {
                dr.evidence = None;
                dr.result_id = Some("report-1".into());
            },
            Refused(
                EvidenceGiven,
                "a missing reply is not evidence of no effect",
            ),
        ),
        // CommittedEffect.
        row(
            "not_applied with no committed event",
            NotApplied,
            |_, _| {},
            Allowed(CommittedEffect, "no committed event recorded"),
        ),
        row(
            "not_applied against a committed effect",
            NotApplied,
            |d, _| d.events = vec![committed("report-1")],
            Refused(
                CommittedEffect,
                "events show committed effect report-1; record applied, or override with a note",
            ),
        ),
        row(
            "not_applied overriding without a note",
            NotApplied,
            |d, dr| {
                d.events = vec![committed("report-1")];
                dr.override_committed = true;
            },
            Refused(CommittedEffect, "override with a note"),
        ),
        row(
            "not_applied overriding with a note",
            NotApplied,
            |d, dr| {
                d.events = vec![committed("report-1")];
                dr.override_committed = true;
                dr.note = Some("receiver rolled it back".into());
            },
            Noted(CommittedEffect, "overridden with a note"),
        ),
        row(
            "not_applied against a committed event without an id",
            NotApplied,
            |d, _| {
                d.events = vec![committed("report-1")];
                d.events[0].detail = None;
            },
            Refused(CommittedEffect, "committed effect (no id)"),
        ),
        row(
            "applied naming another effect than the committed one",
            Applied,
            |d, dr| {
                d.events = vec![committed("report-1")];
                dr.result_id = Some("report-2".into());
            },
            Noted(
                CommittedEffect,
                "result id report-2 differs from the committed effect report-1",
            ),
        ),
        // ContractIdempotent.
        row(
            "retry on an idempotent receiver",
            RetrySameKey,
            |_, _| {},
            Allowed(ContractIdempotent, "create_report honours idempotency keys"),
        ),
        row(
            "retry on a receiver not verified idempotent",
            RetrySameKey,
            |d, _| {
                if let Some(c) = d.contract.as_mut() {
                    c.idempotent = false;
                }
            },
            Refused(
                ContractIdempotent,
                "create_report is not verified idempotent: a retry could duplicate the effect",
            ),
        ),
        row(
            "retry with no contract row",
            RetrySameKey,
            |d, _| d.contract = None,
            Refused(ContractIdempotent, "no op_types row for create_report"),
        ),
        // KeyNotExpired.
        row(
            "retry when the receiver never forgets",
            RetrySameKey,
            |_, _| {},
            Allowed(KeyNotExpired, "never forgets the key"),
        ),
        row(
            "retry before key_expires_at",
            RetrySameKey,
            |d, _| d.operation.key_expires_at = Some("2026-11-07T10:00:00Z".into()),
            Allowed(KeyNotExpired, "2026-11-07T10:00:00Z"),
        ),
        row(
            "retry after key_expires_at",
            RetrySameKey,
            |d, _| d.operation.key_expires_at = Some("2026-11-06T11:00:00Z".into()),
            Refused(KeyNotExpired, "2026-11-06T11:00:00Z"),
        ),
        row(
            "retry after the contract's retention",
            RetrySameKey,
            |d, _| {
                if let Some(c) = d.contract.as_mut() {
                    c.key_retention_s = Some(3600);
                }
            },
            Refused(KeyNotExpired, "2026-11-06T11:00:00Z"),
        ),
        row(
            "retry within the contract's retention",
            RetrySameKey,
            |d, _| {
                if let Some(c) = d.contract.as_mut() {
                    c.key_retention_s = Some(86_400);
                }
            },
            Allowed(KeyNotExpired, "2026-11-07T10:00:00Z"),
        ),
        row(
            "retry: the earlier of the two expiries decides",
            RetrySameKey,
            |d, _| {
                d.operation.key_expires_at = Some("2026-11-09T00:00:00Z".into());
                if let Some(c) = d.contract.as_mut() {
                    c.key_retention_s = Some(3600);
                }
            },
            Refused(KeyNotExpired, "2026-11-06T11:00:00Z"),
        ),
        row(
            "retry with an unreadable key_expires_at",
            RetrySameKey,
            |d, _| d.operation.key_expires_at = Some("next tuesday".into()),
            Refused(KeyNotExpired, "\"next tuesday\""),
        ),
        // DeadlineNotPassed.
        row(
            "retry with no deadline",
            RetrySameKey,
            |_, _| {},
            Allowed(DeadlineNotPassed, "no deadline"),
        ),
        row(
            "retry before the deadline",
            RetrySameKey,
            |d, _| d.operation.deadline_at = Some("2026-11-06T13:00:00Z".into()),
            Allowed(DeadlineNotPassed, "deadline 2026-11-06T13:00:00Z"),
        ),
        row(
            "retry after the deadline",
            RetrySameKey,
            |d, _| d.operation.deadline_at = Some("2026-11-06T11:59:59Z".into()),
            Refused(
                DeadlineNotPassed,
                "deadline 2026-11-06T11:59:59Z has passed",
            ),
        ),
        row(
            "retry with an unreadable deadline",
            RetrySameKey,
            |d, _| d.operation.deadline_at = Some("soon".into()),
            Refused(DeadlineNotPassed, "\"soon\""),
        ),
        // Budget.
        row(
            "retry within the budget",
            RetrySameKey,
            |_, _| {},
            Allowed(Budget, "1/3 attempts used"),
        ),
        row(
            "retry of an exhausted operation",
            RetrySameKey,
            |d, _| {
                d.operation.state = State::Exhausted;
                d.attempts = (1..=3)
                    .map(|n| Attempt {
                        attempt: n,
                        ..d.attempts[0].clone()
                    })
                    .collect();
            },
            Noted(
                Budget,
                "3/3 attempts used: this retry spends one extra attempt",
            ),
        ),
        // RetryStillQueued.
        row(
            "cancel a queued retry",
            CancelRetry,
            |d, _| retry_pending(d, "queued"),
            Allowed(RetryStillQueued, "retry request 9 is still queued"),
        ),
        row(
            "cancel a retry a worker claimed",
            CancelRetry,
            |d, _| retry_pending(d, "claimed"),
            Refused(RetryStillQueued, "a worker has claimed it or it is done"),
        ),
        // NothingSince.
        row(
            "reopen the last decision",
            Reopen,
            completed_by_decision,
            Allowed(NothingSince, "decision 4 was the last change (version 2)"),
        ),
        row(
            "reopen after another write",
            Reopen,
            |d, dr| {
                completed_by_decision(d, dr);
                d.operation.version = 3;
            },
            Refused(
                NothingSince,
                "changed after decision 4 (version 3 now, 2 then): decide again",
            ),
        ),
        row(
            "reopen a decision of another operation",
            Reopen,
            |d, dr| {
                completed_by_decision(d, dr);
                dr.undoes = Some(DecisionId(99));
            },
            Refused(NothingSince, "decision 99 is not a decision of operation 7"),
        ),
        row(
            "reopen a retry",
            Reopen,
            |d, dr| {
                retry_pending(d, "queued");
                dr.undoes = Some(DecisionId(3));
            },
            Refused(NothingSince, "use cancel_retry for a retry"),
        ),
        // RowReadable: the form refuses before Enter what the store would.
        row(
            "applied on a row whose account is malformed",
            Applied,
            |d, _| d.operation.malformed = vec![malformed("account", "invalid UTF-8")],
            Refused(
                RowReadable,
                "column account is malformed (invalid UTF-8); a decision needs the operation's identity",
            ),
        ),
        row(
            "applied on a row whose version is text",
            Applied,
            |d, _| d.operation.malformed = vec![malformed("version", "text \"three\"")],
            Refused(RowReadable, "column version is malformed"),
        ),
        row(
            "applied on a row with only a malformed params cell",
            Applied,
            |d, _| d.operation.malformed = vec![malformed("params", "a 2-byte BLOB")],
            Allowed(StateAllows, "unknown is in the triage queue"),
        ),
    ]
}

fn malformed(column: &'static str, found: &str) -> Malformed {
    Malformed {
        column,
        found: found.into(),
    }
}

fn describe(checks: &[RuleCheck]) -> String {
    checks
        .iter()
        .map(|c| format!("  {}: {:?}\n", c.rule.label(), c.verdict))
        .collect()
}

#[test]
fn every_rule_passes_refuses_or_notes_as_the_operator_is_told() {
    for row in rows() {
        let mut d = detail();
        let mut dr = draft(row.kind);
        (row.setup)(&mut d, &mut dr);
        let checks = check(&dr, &d, now());
        let seen = describe(&checks);
        let first_refusal = refusal(&checks);
        match row.expect {
            Expect::Allowed(rule, text) | Expect::Noted(rule, text) => {
                assert!(first_refusal.is_none(), "{}: refused\n{seen}", row.name);
                let found = checks.iter().find(|c| c.rule == rule);
                let found = found.unwrap_or_else(|| panic!("{}: no {rule:?}\n{seen}", row.name));
                let noted = matches!(row.expect, Expect::Noted(..));
                assert_eq!(
                    matches!(found.verdict, Verdict::Note(_)),
                    noted,
                    "{}: note expected: {noted}\n{seen}",
                    row.name
                );
                assert!(
                    found.verdict.text().contains(text),
                    "{}: wanted {text:?}\n{seen}",
                    row.name
                );
            }
            Expect::Refused(rule, text) => {
                let found =
                    first_refusal.unwrap_or_else(|| panic!("{}: allowed\n{seen}", row.name));
                assert_eq!(
                    found.rule, rule,
                    "{}: refused by another rule\n{seen}",
                    row.name
                );
                assert!(
                    found.verdict.text().contains(text),
                    "{}: wanted {text:?}\n{seen}",
                    row.name
                );
            }
        }
    }
}

#[test]
fn the_table_covers_every_rule_and_every_kind() {
    let rows = rows();
    let rule_of = |e: &Expect| match e {
        Expect::Allowed(r, _) | Expect::Noted(r, _) | Expect::Refused(r, _) => *r,
    };
    for rule in [
        Rule::StateAllows,
        Rule::EvidenceGiven,
        Rule::CommittedEffect,
        Rule::ContractIdempotent,
        Rule::KeyNotExpired,
        Rule::DeadlineNotPassed,
        Rule::Budget,
        Rule::RetryStillQueued,
        Rule::NothingSince,
    ] {
        let refuses = |r: &Row| matches!(r.expect, Expect::Refused(..));
        let about = |r: &&Row| rule_of(&r.expect) == rule;
        assert!(
            rows.iter().filter(about).any(|r| !refuses(r)),
            "no row where {rule:?} lets a decision through"
        );
        // Budget only ever notes; it never refuses.
        assert!(
            rule == Rule::Budget || rows.iter().filter(about).any(refuses),
            "no row where {rule:?} refuses"
        );
    }
    for kind in [
        DecisionKind::Applied,
        DecisionKind::NotApplied,
        DecisionKind::RetrySameKey,
        DecisionKind::CancelRetry,
        DecisionKind::Reopen,
    ] {
        for refused in [false, true] {
            assert!(
                rows.iter()
                    .any(|r| r.kind == kind && matches!(r.expect, Expect::Refused(..)) == refused),
                "no row where {kind} is {}",
                if refused { "refused" } else { "allowed" }
            );
        }
    }
}
