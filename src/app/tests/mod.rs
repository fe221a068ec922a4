//! `update` driven by key scripts through the real keymap, on a temp ledger.

mod bulk;
mod drill;
mod drill_flow;
mod late;
mod pointer;
mod probe;
mod scan;

use crate::app::testkit::{Harness, fixture, now};
use crate::app::window::MAX_BUFFER;
use crate::app::*;
use crate::domain::{DecisionDraft, DecisionKind, NewOperation, OperationId, State};

fn keys_in(h: &Harness) -> Vec<String> {
    h.app
        .current_list()
        .unwrap()
        .window
        .rows
        .iter()
        .map(|r| r.idem_key.clone())
        .collect()
}

fn recorded(effects: &[Effect]) -> Option<&Vec<DecisionDraft>> {
    effects.iter().find_map(|e| match e {
        Effect::Write(Write::Decisions(d)) => Some(d),
        _ => None,
    })
}

#[test]
fn the_queue_holds_only_operations_needing_a_decision() {
    let h = Harness::new();
    let keys = keys_in(&h);
    assert_eq!(keys.len(), 5);
    assert_eq!(keys[0], "k-report-1");
    assert!(keys.contains(&"k-stale".to_string()));
    assert!(!keys.contains(&"k-live".to_string()));
    assert!(!keys.contains(&"k-done".to_string()));
    assert_eq!(h.app.queue.count, Some(5));
    assert_eq!(h.app.counts.as_ref().unwrap().total, 7);
}

#[test]
fn cursor_moves_and_stays_in_the_list() {
    let mut h = Harness::new();
    h.keys("j j");
    assert_eq!(h.selected_key(), "k-order");
    h.keys("G");
    assert_eq!(h.selected_key(), "k-stale");
    h.keys("j j j");
    assert_eq!(h.selected_key(), "k-stale");
    h.keys("g k");
    assert_eq!(h.selected_key(), "k-report-1");
}

#[test]
fn applied_prefills_the_committed_effect_and_records_it() {
    let mut h = Harness::new();
    h.keys("a");
    assert!(matches!(h.app.mode, Mode::Form(_)));
    assert_eq!(h.app.form().unwrap().result_id, "report-1");
    let effects = h.keys("enter");
    let drafts = recorded(&effects).expect("a decision was recorded");
    assert_eq!(drafts.len(), 1);
    assert_eq!(drafts[0].kind, DecisionKind::Applied);
    assert_eq!(drafts[0].result_id.as_deref(), Some("report-1"));
    assert_eq!(drafts[0].operator, "alice");
    assert_eq!(drafts[0].expected_version, 0);
    let status = h.app.status.clone().unwrap();
    assert!(!status.error, "{status:?}");
    assert_eq!(status.text, "recorded #7 applied (unknown → completed)");
    assert!(!keys_in(&h).contains(&"k-report-1".to_string()));
    assert_eq!(h.app.session.len(), 1);
}

#[test]
fn not_applied_with_a_committed_effect_needs_an_override_and_a_note() {
    let mut h = Harness::new();
    h.keys("n");
    h.type_text("provider has no record");
    let effects = h.keys("enter");
    assert!(recorded(&effects).is_none());
    let problem = h.app.form().unwrap().problem.clone().unwrap();
    assert!(problem.contains("committed effect seen"), "{problem}");
    h.keys("tab");
    h.type_text("checked the provider console");
    h.keys("ctrl-o");
    let effects = h.keys("enter");
    let drafts = recorded(&effects).expect("recorded with override");
    assert!(drafts[0].override_committed);
    assert_eq!(
        drafts[0].note.as_deref(),
        Some("checked the provider console")
    );
}

#[test]
fn retry_is_refused_for_a_receiver_that_does_not_honour_keys() {
    let mut h = Harness::new();
    h.keys("j j r");
    let effects = h.keys("enter");
    assert!(recorded(&effects).is_none());
    let problem = h.app.form().unwrap().problem.clone().unwrap();
    assert!(
        problem.starts_with("refused: #5 contract idempotent"),
        "{problem}"
    );
    h.keys("esc");
    assert_eq!(h.app.mode, Mode::Normal);
    assert_eq!(
        h.app.status.as_ref().unwrap().text,
        "cancelled: nothing recorded"
    );
}

#[test]
fn several_marked_rows_need_the_count_typed() {
    let mut h = Harness::new();
    h.keys("space space a");
    let form = h.app.form().unwrap();
    assert_eq!(form.targets, vec![OperationId(7), OperationId(6)]);
    assert_eq!(form.result_id, "", "no shared result id for several rows");
    h.keys("tab");
    h.type_text("bulk check with provider");
    let effects = h.keys("enter");
    assert!(recorded(&effects).is_none());
    assert!(
        h.app
            .form()
            .unwrap()
            .problem
            .as_ref()
            .unwrap()
            .contains("type 2")
    );
    h.keys("tab tab");
    h.type_text("2");
    let effects = h.keys("enter");
    let drafts = recorded(&effects).expect("both recorded");
    assert_eq!(drafts.len(), 2);
    assert_eq!(drafts[0].result_id.as_deref(), Some("report-1"));
    assert_eq!(drafts[1].result_id, None);
    assert!(h.app.queue.marks.is_empty());
    assert_eq!(keys_in(&h).len(), 3);
}

#[test]
fn the_filter_requeries_live_and_keeps_the_list_on_a_parse_error() {
    let mut h = Harness::new();
    h.keys("/");
    let effects = h.type_text("account:acme");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Read(Read::LoadPage { .. })))
    );
    assert_eq!(keys_in(&h), vec!["k-report-1", "k-order"]);
    h.keys("enter");
    assert_eq!(h.app.mode, Mode::Normal);
    h.keys("/");
    h.type_text(" \"acm");
    let error = h.app.queue.filter_error.clone().unwrap();
    assert!(error.contains("quote is not closed"), "{error}");
    assert_eq!(keys_in(&h), vec!["k-report-1", "k-order"]);
    h.keys("esc");
    assert_eq!(keys_in(&h).len(), 5);
    assert_eq!(h.app.queue.filter_error, None);
}

#[test]
fn undo_reopens_my_last_decision() {
    let mut h = Harness::new();
    h.keys("a enter");
    let decided = h.app.session[0].decision_id;
    h.keys("u");
    let form = h.app.form().unwrap();
    assert_eq!(form.kind, DecisionKind::Reopen);
    assert_eq!(form.undoes, Some(decided));
    let effects = h.keys("enter");
    assert_eq!(recorded(&effects).unwrap()[0].undoes, Some(decided));
    assert!(h.app.session.is_empty());
    assert_eq!(keys_in(&h)[0], "k-report-1");
    h.keys("u");
    assert!(
        h.app
            .status
            .as_ref()
            .unwrap()
            .text
            .starts_with("nothing to undo")
    );
}

#[test]
fn a_version_conflict_names_the_other_writer_and_the_new_state() {
    let mut h = Harness::new();
    h.keys("a");
    // Bob decides the same operation from another console first.
    let mut draft = recorded(&[]).cloned().unwrap_or_default();
    draft.push(DecisionDraft {
        op_id: OperationId(7),
        kind: DecisionKind::NotApplied,
        result_id: None,
        evidence: Some("x".into()),
        note: Some("n".into()),
        override_committed: true,
        operator: "bob".into(),
        expected_version: 0,
        undoes: None,
    });
    h.ledger.record_decision(&draft[0], now()).unwrap();
    h.keys("enter");
    let status = h.app.status.clone().unwrap();
    assert!(status.error);
    assert!(
        status.text.contains("changed meanwhile by bob"),
        "{}",
        status.text
    );
    assert!(status.text.contains("now not_applied"), "{}", status.text);
    assert!(
        !keys_in(&h).contains(&"k-report-1".to_string()),
        "row reloaded"
    );
}

#[test]
fn read_only_refuses_to_open_a_decision() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    let effects = h.keys("a");
    assert!(effects.is_empty());
    assert_eq!(h.app.mode, Mode::Normal);
    assert!(h.app.status.as_ref().unwrap().text.starts_with("read-only"));
}

#[test]
fn live_changes_appear_and_the_cursor_stays_on_its_operation() {
    let mut h = Harness::new();
    h.keys("j j");
    let mut new = fixture().pop().unwrap();
    new.idem_key = "k-new".into();
    h.ledger.import(&[new], &[]).unwrap();
    h.receive(Msg::LedgerChanged);
    assert_eq!(keys_in(&h)[0], "k-new");
    assert_eq!(h.selected_key(), "k-order");
    assert_eq!(h.app.last_change, Some(now()));
}

#[test]
fn views_cycle_and_help_opens_for_the_mode() {
    let mut h = Harness::new();
    h.keys("tab");
    assert_eq!(h.app.view, View::All);
    assert_eq!(keys_in(&h).len(), 7);
    h.keys("tab tab");
    assert_eq!(h.app.view, View::Audit);
    h.keys("shift-tab");
    assert_eq!(h.app.view, View::Drills);
    h.keys("1 ?");
    assert_eq!(
        (h.app.view, &h.app.mode),
        (View::Queue, &Mode::Help { form: None })
    );
    h.keys("j esc");
    assert_eq!(h.app.mode, Mode::Normal);
    assert_eq!(
        h.selected_key(),
        "k-report-1",
        "keys in help do not move the list"
    );
}

#[test]
fn the_detail_follows_the_cursor() {
    let mut h = Harness::new();
    let effects = h.keys("enter");
    assert_eq!(
        effects,
        vec![Effect::Read(Read::LoadDetail(OperationId(7)))]
    );
    assert!(h.app.detail.as_ref().unwrap().detail.is_some());
    let effects = h.keys("j");
    assert!(effects.contains(&Effect::Read(Read::LoadDetail(OperationId(6)))));
    h.keys("esc");
    assert!(!h.app.detail_open);
}

#[test]
fn a_retry_is_undone_by_cancelling_it() {
    let mut h = Harness::new();
    // k-stale: create_report honours keys, key not expired, stale lease.
    h.keys("G r enter");
    assert_eq!(h.app.session[0].kind, DecisionKind::RetrySameKey);
    h.keys("u");
    assert_eq!(h.app.form().unwrap().kind, DecisionKind::CancelRetry);
    let effects = h.keys("enter");
    assert_eq!(
        recorded(&effects).unwrap()[0].kind,
        DecisionKind::CancelRetry
    );
    assert!(h.app.session.is_empty());
    let status = h.app.status.clone().unwrap();
    assert_eq!(
        status.text,
        "recorded #3 cancel_retry (retry_pending → reserved)"
    );
    assert!(
        keys_in(&h).contains(&"k-stale".to_string()),
        "back in the queue"
    );
}

#[test]
fn a_user_keymap_changes_what_keys_do_and_what_help_says() {
    let mut h = Harness::new();
    h.app.keymap =
        crate::console::input::keymap::Keymap::load(Some("list x decide_applied\nlist a none"))
            .unwrap();
    h.keys("a");
    assert_eq!(h.app.mode, Mode::Normal);
    h.keys("x");
    assert_eq!(h.app.form().unwrap().kind, DecisionKind::Applied);
}

fn many(n: usize) -> Vec<NewOperation> {
    let base = fixture().pop().unwrap();
    (0..n)
        .map(|i| NewOperation {
            idem_key: format!("k-{i:05}"),
            state: if i % 2 == 0 {
                State::Unknown
            } else {
                State::Completed
            },
            ..base.clone()
        })
        .collect()
}

#[test]
fn a_long_list_is_paged_not_loaded() {
    let mut h = Harness::with(&many(2_000));
    h.keys("2");
    for _ in 0..40 {
        h.keys("pgdn");
    }
    let w = &h.app.all.window;
    assert!(w.rows.len() <= MAX_BUFFER, "{}", w.rows.len());
    assert!(!w.at_start);
    h.keys("G");
    assert_eq!(h.selected_key(), "k-00000");
    h.keys("g");
    assert_eq!(h.selected_key(), "k-01999");
}

mod random {
    use super::*;
    use proptest::prelude::*;

    const TOKENS: &[&str] = &[
        "j",
        "k",
        "g",
        "G",
        "pgdn",
        "pgup",
        "enter",
        "esc",
        "tab",
        "shift-tab",
        "space",
        "a",
        "n",
        "r",
        "c",
        "u",
        "/",
        "x",
        "backspace",
        "?",
        "ctrl-o",
        "J",
        "K",
        "2",
        "4",
        "1",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn random_keys_never_panic_and_the_cursor_stays_in_bounds(
            script in proptest::collection::vec(0..TOKENS.len(), 0..40),
            height in 6u16..50,
        ) {
            let mut h = Harness::with(&many(150));
            h.receive(Msg::Resize(90, height));
            for i in script {
                h.keys(TOKENS[i]);
                if let Some(list) = h.app.current_list() {
                    let w = &list.window;
                    prop_assert!(w.rows.is_empty() || w.cursor < w.rows.len());
                    prop_assert!(w.top <= w.cursor);
                    prop_assert!(w.cursor < w.top + h.app.visible_rows());
                }
                let backend = ratatui::backend::TestBackend::new(90, height);
                let mut terminal = ratatui::Terminal::new(backend).unwrap();
                terminal.draw(|f| crate::ui::render(&h.app, f)).unwrap();
            }
        }
    }
}

#[test]
fn an_error_stays_until_the_next_key_but_not_past_it() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    h.keys("a");
    assert!(h.app.status.as_ref().unwrap().error);
    h.receive(Msg::LedgerChanged);
    assert!(
        h.app.status.as_ref().unwrap().error,
        "a live refresh keeps it"
    );
    h.keys("j");
    assert_eq!(h.app.status, None);
}

#[test]
fn enter_in_the_audit_trail_shows_the_decision_s_operation() {
    let mut h = Harness::new();
    h.keys("a enter");
    h.keys("4");
    assert_eq!(h.app.view, View::Audit);
    let decided = h
        .app
        .audit
        .selected()
        .expect("the decision is listed")
        .op_id;
    let effects = h.keys("enter");
    assert!(
        effects.contains(&Effect::Read(Read::LoadDetail(decided))),
        "{effects:?}"
    );
    let pane = h.app.detail.as_ref().expect("detail open");
    assert_eq!(pane.id, decided);
    assert_eq!(
        pane.detail.as_ref().unwrap().decisions.len(),
        1,
        "the detail shows the decision just recorded"
    );
}

#[test]
fn lost_live_updates_are_said_until_the_ledger_answers_again() {
    let mut h = Harness::new();
    h.receive(Msg::LiveLost("database is locked".into()));
    assert!(h.app.live_error.is_some());
    let status = h.app.status.clone().unwrap();
    assert!(
        status.error && status.text.contains("may be stale"),
        "{status:?}"
    );
    let effects = h.receive(Msg::LiveRestored);
    assert!(h.app.live_error.is_none());
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Read(Read::LoadPage { .. }))),
        "the screen is reread once the ledger answers: {effects:?}"
    );
}

#[test]
fn s_sorts_the_list_and_keeps_the_cursor_on_its_operation() {
    let mut h = Harness::new();
    h.keys("j j");
    assert_eq!(h.selected_key(), "k-order");
    // id ↓ → created ↓ → updated ↓ → attempts ↓.
    let effects = h.keys("s s s");
    let sort = h.app.current_list().unwrap().window.sort;
    assert_eq!(sort.to_string(), "attempts ↓");
    let reads: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Read(Read::LoadPage { source, merge, .. }) => Some((source.as_ref(), *merge)),
            _ => None,
        })
        .collect();
    assert!(
        reads.iter().any(|(source, merge)| matches!(
            (source, merge),
            (effect::PageSource::Operations { sort: s, .. }, window::Merge::Replace { keep: Some(5) })
                if *s == sort
        )),
        "{reads:?}"
    );
    assert_eq!(h.selected_key(), "k-order");
    // Most attempts first, ties newest first; the rows before the cursor's
    // were read back in too.
    let keys = keys_in(&h);
    assert_eq!(keys[..3], ["k-order", "k-report-1", "k-conflict"]);
    assert_eq!(keys[4], "k-stale");
    h.keys("S");
    assert_eq!(h.selected_key(), "k-order");
    assert_eq!(keys_in(&h)[0], "k-stale");
    assert_eq!(keys_in(&h)[4], "k-order");
}
