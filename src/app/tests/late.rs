//! The model when answers arrive late, out of order or in bursts, as they do
//! from the shell's workers: out-of-date pages are ignored, commits are
//! reread one at a time, the form says it is recording, a replaced ledger
//! file takes no decision. Effects are held back here instead of performed
//! at once, to play the worker's timing.

use crate::app::testkit::Harness;
use crate::app::*;
use crate::domain::DecisionKind;

fn accounts(h: &Harness) -> Vec<String> {
    h.app
        .queue
        .window
        .rows
        .iter()
        .map(|r| r.account.clone())
        .collect()
}

fn pages(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::Read(Read::LoadPage { .. })))
        .count()
}

#[test]
fn a_filter_changed_mid_query_shows_only_the_new_filter_s_rows() {
    let mut h = Harness::new();
    h.keys("/");
    // The operator types a filter; its page and count are still running…
    let mut stale = Vec::new();
    for c in "account:gamma".chars() {
        stale.extend(update(&mut h.app, Intent::Input(c)));
    }
    // …and changes it before they answer.
    for _ in "gamma".chars() {
        h.act(Intent::DeleteChar);
    }
    h.type_text("acme");
    assert_eq!(accounts(&h), ["acme", "acme"]);
    // The old filter's answers arrive last; they must not win.
    h.settle(stale);
    assert_eq!(accounts(&h), ["acme", "acme"]);
    assert_eq!(h.app.queue.count, Some(2));
}

#[test]
fn a_burst_of_commits_costs_one_reread_at_a_time() {
    let mut h = Harness::new();
    let first = apply(&mut h.app, Msg::LedgerChanged);
    assert_eq!(pages(&first), 1);
    // Nine more commits while the reread runs: nothing more is asked yet.
    for _ in 0..9 {
        assert_eq!(apply(&mut h.app, Msg::LedgerChanged), Vec::new());
    }
    // The reread answers: exactly one more follows for all nine.
    let mut next = Vec::new();
    for effect in first {
        for msg in h.perform(effect) {
            next.extend(apply(&mut h.app, msg));
        }
    }
    assert_eq!(pages(&next), 1, "{next:?}");
    h.settle(next);
    assert_eq!(h.app.refresh, Refresh::default(), "nothing left to reread");
}

#[test]
fn a_reread_superseded_by_a_newer_request_does_not_block_the_next_one() {
    let mut h = Harness::new();
    let refresh = apply(&mut h.app, Msg::LedgerChanged);
    assert_eq!(pages(&refresh), 1);
    // The operator jumps before the reread answers; the worker drops the
    // reread, and the jump's page answers instead.
    let jump = update(&mut h.app, Intent::Last);
    h.settle(jump);
    assert_eq!(h.app.refresh.in_flight, None);
    assert_eq!(pages(&apply(&mut h.app, Msg::LedgerChanged)), 1);
}

#[test]
fn the_form_says_it_is_recording_and_keys_still_answer() {
    let mut h = Harness::new();
    h.keys("a");
    let effects = update(&mut h.app, Intent::Confirm);
    assert!(matches!(
        effects.as_slice(),
        [Effect::Write(Write::Decisions(_))]
    ));
    assert!(h.app.recording.is_some());
    assert!(
        matches!(h.app.mode, Mode::Form(_)),
        "the form stays while recording"
    );
    // Typing no longer changes what is being written; Enter twice records once.
    assert_eq!(update(&mut h.app, Intent::Input('x')), Vec::new());
    assert_eq!(update(&mut h.app, Intent::Confirm), Vec::new());
    assert_eq!(h.app.form().unwrap().result_id, "report-1");
    // Esc hides it; no other form opens until the writer answers.
    update(&mut h.app, Intent::Back);
    assert_eq!((&h.app.mode, h.app.form().is_none()), (&Mode::Normal, true));
    update(&mut h.app, Intent::Decide(DecisionKind::Applied));
    assert!(h.app.form().is_none());
    assert!(
        h.app
            .status
            .as_ref()
            .unwrap()
            .text
            .contains("still recording")
    );
    h.settle(effects);
    assert!(h.app.recording.is_none());
    let status = h.app.status.clone().unwrap();
    assert!(status.text.starts_with("recorded #7 applied"), "{status:?}");
}

#[test]
fn a_replaced_ledger_file_takes_no_decision_and_says_why() {
    let mut h = Harness::new();
    h.keys("a");
    h.receive(Msg::FileReplaced("the ledger file was deleted".into()));
    assert_eq!(h.keys("enter"), Vec::new());
    let problem = h.app.form().unwrap().problem.clone().unwrap();
    assert!(problem.contains("the ledger file was deleted"), "{problem}");
    h.keys("esc a");
    assert!(h.app.form().is_none());
    let status = h.app.status.clone().unwrap();
    assert!(
        status.error && status.text.contains("was deleted"),
        "{status:?}"
    );
    // Back in place: decisions are possible again.
    h.receive(Msg::FileRestored);
    h.keys("a");
    assert!(h.app.form().is_some());
}

#[test]
fn while_the_writer_adopts_the_ledger_it_is_read_only_and_says_how_far() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    h.receive(Msg::Adopting(crate::store::Progress {
        step: "building index settle_operations_state".into(),
        done: 2,
        total: 15,
    }));
    h.keys("a");
    assert!(h.app.form().is_none());
    let status = h.app.status.clone().unwrap();
    assert!(
        status
            .text
            .contains("adopting the ledger (3 of 15: building index"),
        "{status:?}"
    );
    let effects = h.receive(Msg::Adopted(Ok("adopted".into())));
    assert!(pages(&effects) == 1, "reread once adopted: {effects:?}");
    assert_eq!(h.app.access, LedgerAccess::ReadWrite);
    h.keys("a");
    assert!(h.app.form().is_some(), "decisions open once adopted");
}

#[test]
fn a_console_turns_read_only_while_no_write_goes_through_and_writable_after() {
    let mut h = Harness::new();
    h.receive(Msg::WritesBlocked(Some("no primary reachable".into())));
    assert_eq!(
        h.app.access,
        LedgerAccess::Unavailable("no primary reachable".into())
    );
    h.keys("a");
    assert!(
        h.app.form().is_none(),
        "no decision while no write goes through"
    );
    h.receive(Msg::WritesBlocked(None));
    assert_eq!(h.app.access, LedgerAccess::ReadWrite);
    h.keys("a");
    assert!(h.app.form().is_some(), "decisions open again");
    // A console opened read-only stays so, whatever the writer finds.
    let mut look = Harness::new();
    look.app.access = LedgerAccess::ReadOnly;
    look.receive(Msg::WritesBlocked(Some("no primary reachable".into())));
    look.receive(Msg::WritesBlocked(None));
    assert_eq!(look.app.access, LedgerAccess::ReadOnly);
}

#[test]
fn where_the_reread_after_a_decision_read_it_follows_what_was_recorded() {
    let mut h = Harness::new();
    h.app.info("recorded #7 applied (unknown → completed)");
    h.receive(Msg::ReadFrom(
        "read from the primary: the standby lags".into(),
    ));
    assert_eq!(
        h.app.status.clone().unwrap().text,
        "recorded #7 applied (unknown → completed); read from the primary: the standby lags"
    );
    // An error stays what the status line says.
    h.app.error("ledger busy");
    h.receive(Msg::ReadFrom(
        "standby caught up in 3 ms: read from it".into(),
    ));
    assert_eq!(h.app.status.clone().unwrap().text, "ledger busy");
}

#[test]
fn a_read_refused_by_a_fault_keeps_its_words_when_the_same_fault_stops_live_updates_and_writes() {
    let mut h = Harness::new();
    h.receive(Msg::LiveLost("the server went away".into()));
    assert!(
        h.app
            .status
            .clone()
            .unwrap()
            .text
            .contains("live updates stopped")
    );
    h.receive(Msg::WritesBlocked(Some("no primary reachable".into())));
    let said = h.app.status.clone().unwrap().text;
    assert!(
        said.starts_with("read-only: no primary reachable"),
        "{said}"
    );

    let mut h = Harness::new();
    let read = "no answer from the server for 1.5 s at 127.0.0.1:5432";
    h.app.error(read);
    h.receive(Msg::LiveLost("no answer".into()));
    h.receive(Msg::WritesBlocked(Some("no primary reachable".into())));
    assert_eq!(h.app.status.clone().unwrap().text, read);
    // The header still has both.
    assert!(h.app.live_error.is_some());
    assert_eq!(
        h.app.access,
        LedgerAccess::Unavailable("no primary reachable".into())
    );
}
