//! Deciding every row a filter matches, from the keys: `*` selects without
//! loading, the form judges all of them, refuses Enter until the typed
//! count is the count it will write, and the write lands on exactly the
//! matching rows, skipping one changed meanwhile.

use crate::app::testkit::{Harness, fixture};
use crate::app::*;
use crate::domain::{DecisionDraft, DecisionKind, NewOperation, OperationId, State};
use crate::store::{Access, Ledger};

/// Five unknown `acme` operations (the third with a committed effect, so
/// `not_applied` refuses it) and two of `beta`, plus one completed `acme`.
fn incident() -> Vec<NewOperation> {
    let committed = fixture()[6].clone();
    let mut plain = committed.clone();
    plain.attempts.clear();
    plain.events.clear();
    let mut ops = Vec::new();
    for (i, account) in [
        "acme", "acme", "acme", "acme", "acme", "beta", "beta", "acme",
    ]
    .iter()
    .enumerate()
    {
        let mut op = if i == 2 {
            committed.clone()
        } else {
            plain.clone()
        };
        op.account = account.to_string();
        op.idem_key = format!("k-{i}");
        if i == 7 {
            op.state = State::Completed;
        }
        ops.push(op);
    }
    ops
}

fn preview_asked(effects: &[Effect]) -> Option<&DecisionDraft> {
    effects.iter().find_map(|e| match e {
        Effect::Read(Read::PreviewBulk { template, .. }) => Some(template),
        _ => None,
    })
}

fn bulk_write(effects: &[Effect]) -> Option<(&DecisionDraft, &Vec<bulk::Target>)> {
    effects.iter().find_map(|e| match e {
        Effect::Write(Write::Bulk { template, targets }) => Some((template, targets)),
        _ => None,
    })
}

/// Filters to `acme`, selects all matching, opens `not_applied` and types
/// evidence; Enter judges again with it.
fn judged_with_evidence(h: &mut Harness) {
    h.keys("/");
    h.type_text("account:acme");
    assert!(h.keys("enter *").is_empty(), "selecting loads nothing");
    let asked = h.keys("n");
    let template = preview_asked(&asked).expect("the form asks for a preview");
    assert_eq!(template.kind, DecisionKind::NotApplied);
    h.type_text("provider confirms no charge");
    let again = h.keys("enter");
    let template = preview_asked(&again).expect("edited fields are judged again");
    assert_eq!(
        template.evidence.as_deref(),
        Some("provider confirms no charge")
    );
}

#[test]
fn star_selects_the_filter_and_the_form_refuses_enter_until_the_count_typed_is_the_count_written() {
    let mut h = Harness::with(&incident());
    judged_with_evidence(&mut h);
    let selection = h.app.selection.clone().expect("the selection stays");
    assert_eq!(
        selection.count,
        Some(5),
        "the counter's count for the filter"
    );
    let form = h.app.form().cloned().unwrap();
    let preview = form.bulk.as_ref().unwrap().preview.clone().unwrap();
    assert_eq!(preview.matched, 5);
    assert_eq!(preview.pass.len(), 4);
    assert_eq!(preview.refused.len(), 1, "{:?}", preview.refused);
    assert_eq!(preview.refused[0].ids, vec![OperationId(3)]);

    // To the confirm field; the matched count (5) is not the written one.
    h.keys("tab tab");
    h.type_text("5");
    assert!(bulk_write(&h.keys("enter")).is_none());
    let problem = h.app.form().unwrap().problem.clone().unwrap();
    assert!(problem.contains("type 4"), "{problem}");

    h.keys("backspace");
    h.type_text("4");
    let effects = update(&mut h.app, Intent::Confirm);
    let (template, targets) = bulk_write(&effects).expect("the count matches: it writes");
    assert_eq!(template.kind, DecisionKind::NotApplied);
    // Each row guarded by the version the preview saw.
    let seen: Vec<(OperationId, i64)> = targets.iter().map(|t| (t.id, t.version)).collect();
    let mut expected = Vec::new();
    for id in [5, 4, 2, 1].map(OperationId) {
        expected.push((id, h.ledger.detail(id).unwrap().operation.version));
    }
    assert_eq!(seen, expected);
}

#[test]
fn esc_on_the_bulk_form_drops_the_selection_and_decisions_go_back_to_the_cursor() {
    let mut h = Harness::with(&incident());
    h.keys("/");
    h.type_text("account:acme");
    h.keys("enter * n");
    // The reader must stop judging: on millions of rows it would hold every
    // page behind it for seconds.
    assert!(
        h.keys("esc")
            .iter()
            .any(|e| matches!(e, Effect::Read(Read::CancelBulkPreview)))
    );
    assert!(h.app.selection.is_none());
    h.keys("n");
    let form = h.app.form().unwrap();
    assert!(form.bulk.is_none());
    assert_eq!(form.targets.len(), 1);
}

#[test]
fn editing_the_filter_drops_the_selection_it_made() {
    let mut h = Harness::with(&incident());
    h.keys("/");
    h.type_text("account:acme");
    h.keys("enter *");
    assert!(h.app.selection.is_some());
    // Opening the filter again is enough: what it matches may change.
    assert!(
        h.keys("/")
            .iter()
            .any(|e| matches!(e, Effect::Read(Read::CancelBulkPreview)))
    );
    h.keys("enter");
    assert!(h.app.selection.is_none());
    assert!(h.app.form().is_none());
    h.keys("a");
    assert!(h.app.form().unwrap().bulk.is_none());
}

#[test]
fn the_write_changes_exactly_the_matching_rows_and_skips_one_changed_meanwhile() {
    let mut h = Harness::with(&incident());
    judged_with_evidence(&mut h);

    // Another connection decides row 2 between the preview and Enter.
    let path = h._dir.path().join("ledger.db");
    let (mut other, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    let version = other.detail(OperationId(2)).unwrap().operation.version;
    other
        .record_decision(
            &DecisionDraft {
                op_id: OperationId(2),
                kind: DecisionKind::NotApplied,
                result_id: None,
                evidence: Some("bob checked".into()),
                note: None,
                override_committed: false,
                operator: "bob".into(),
                expected_version: version,
                undoes: None,
            },
            h.app.now,
        )
        .unwrap();

    h.keys("tab tab");
    h.type_text("4");
    h.keys("enter");

    let status = h.app.status.clone().unwrap();
    assert!(
        status
            .text
            .starts_with("wrote 3 of 4; 0 refused, 1 conflicted"),
        "{status:?}"
    );
    assert!(status.text.contains("conflicted: #2"), "{status:?}");
    assert!(h.app.form().is_none() && h.app.selection.is_none());

    for id in 1..=8 {
        let d = h.ledger.detail(OperationId(id)).unwrap();
        let mine: Vec<_> = d
            .decisions
            .iter()
            .filter(|x| x.operator == "alice")
            .collect();
        match id {
            1 | 4 | 5 => {
                assert_eq!(d.operation.state, State::NotApplied, "#{id}");
                assert_eq!(mine.len(), 1, "#{id} has its own decision");
            }
            2 => {
                assert_eq!(d.decisions.len(), 1, "bob's only: not overwritten");
                assert!(mine.is_empty());
            }
            _ => assert!(mine.is_empty(), "#{id} did not match or was refused"),
        }
    }
}

#[test]
fn from_the_all_view_the_selection_still_reaches_only_the_queue() {
    let mut h = Harness::with(&incident());
    h.keys("2 /");
    h.type_text("account:acme");
    h.keys("enter * n");
    let form = h.app.form().unwrap();
    let preview = form.bulk.as_ref().unwrap().preview.clone().unwrap();
    // Six acme rows in All; the completed one (#8) is not the queue's.
    assert_eq!(h.app.all.count, Some(6));
    assert_eq!(preview.matched, 5);
    assert!(!preview.pass.iter().any(|t| t.id == OperationId(8)));
}

#[test]
fn a_write_past_one_batch_reports_progress_on_the_status_line_then_the_summary() {
    let mut ops = Vec::new();
    for i in 0..201 {
        let mut op = incident()[0].clone();
        op.idem_key = format!("k-{i}");
        ops.push(op);
    }
    let mut h = Harness::with(&ops);
    h.keys("*");
    assert_eq!(h.app.selection.as_ref().unwrap().count, Some(201));
    h.keys("n");
    h.type_text("none at the provider");
    h.keys("enter tab tab");
    h.type_text("201");
    let effects = update(&mut h.app, Intent::Confirm);
    let write = effects
        .into_iter()
        .find(|e| matches!(e, Effect::Write(Write::Bulk { .. })))
        .unwrap();
    let mut answers = h.perform(write).into_iter();

    h.receive(answers.next().unwrap());
    assert_eq!(h.app.status.clone().unwrap().text, "writing 200 of 201…");
    assert!(h.app.recording.is_some(), "no other form opens meanwhile");
    h.receive(answers.next().unwrap());
    assert_eq!(
        h.app.status.clone().unwrap().text,
        "wrote 201 of 201; 0 refused, 0 conflicted (changed meanwhile, not overwritten)"
    );
    assert!(answers.next().is_none());
    assert_eq!(h.app.queue.count, Some(0));
}
