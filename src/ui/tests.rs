//! Whole-frame snapshots of every view, pane and popup, drawn from a temp
//! ledger through the same key scripts an operator would type.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::testkit::{Harness, fixture};
use crate::app::{App, LoadedDrill, Msg};
use crate::domain::NewOperation;

/// The frame as text, one line per row, trailing spaces trimmed.
fn draw(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::render(app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let mut line = String::new();
        for x in 0..width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn sized(width: u16, height: u16) -> Harness {
    let mut h = Harness::new();
    h.receive(Msg::Resize(width, height));
    h
}

fn snap(h: &Harness) -> String {
    let frame = draw(&h.app, h.app.size.0, h.app.size.1);
    assert!(!frame.contains('\u{1b}'), "an escape reached the terminal");
    frame
}

#[test]
fn queue() {
    let h = sized(100, 24);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn queue_80x24() {
    let h = sized(80, 24);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn all_operations() {
    let mut h = sized(100, 24);
    h.keys("2");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn detail_beside_the_list_when_wide() {
    let mut h = sized(160, 45);
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn detail_below_the_list_when_narrow() {
    let mut h = sized(80, 40);
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn detail_of_a_value_with_escape_sequences() {
    let mut h = sized(100, 40);
    h.keys("j enter");
    let frame = snap(&h);
    assert!(frame.contains("evil␛[31m"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn form_applied() {
    let mut h = sized(100, 30);
    h.keys("a");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn form_not_applied_refused_by_the_committed_effect() {
    let mut h = sized(100, 30);
    h.keys("n");
    h.type_text("provider has no record");
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn form_retry_refused_by_the_contract() {
    let mut h = sized(100, 30);
    h.keys("j j r");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn form_for_several_rows_asks_for_the_count() {
    let mut h = sized(100, 30);
    h.keys("space space space a tab");
    h.type_text("bulk check");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn after_a_decision_and_the_audit() {
    let mut h = sized(100, 24);
    h.keys("a enter");
    let queue = snap(&h);
    assert!(queue.contains("recorded #7 applied (unknown → completed)"));
    h.keys("4");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn help() {
    let mut h = sized(100, 45);
    h.keys("?");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn help_at_80x24_shows_every_key_in_two_columns() {
    let mut h = sized(80, 24);
    h.keys("?");
    let text = snap(&h);
    for key in ["ctrl-r", "cancel", "undo", "quit"] {
        assert!(text.contains(key), "{key} missing from help:\n{text}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn filter_with_a_parse_error() {
    let mut h = sized(100, 24);
    h.keys("/");
    h.type_text("acme \"x");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn empty_ledger() {
    let mut h = Harness::with(&[]);
    h.receive(Msg::Resize(80, 24));
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn very_narrow_with_detail() {
    let mut h = sized(50, 20);
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn long_values_are_cut_not_wrapped() {
    let mut long = fixture().pop().unwrap();
    long.account = "a-very-long-account-name-that-goes-on-and-on".into();
    long.idem_key = format!("k-{}", "0123456789".repeat(12));
    let ops: Vec<NewOperation> = vec![long];
    let mut h = Harness::with(&ops);
    h.receive(Msg::Resize(100, 24));
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn drills() {
    let mut h = sized(100, 30);
    let path = std::path::Path::new("sample-data/drill-results.json");
    h.app.drills.files = vec![
        crate::effects::read_drill(path),
        LoadedDrill {
            path: "missing.json".into(),
            analysis: Err("missing.json: cannot read: No such file or directory".into()),
        },
    ];
    h.keys("3");
    insta::assert_snapshot!(snap(&h));
}

/// The Drills view picks each line's look from the analysis: a duplicate
/// case and an error finding stand out, a safe case and a note do not.
#[test]
fn drills_mark_duplicates_and_errors_from_the_analysis() {
    use ratatui::style::Color;
    let mut h = sized(100, 40);
    let path = std::path::Path::new("sample-data/drill-results.json");
    h.app.drills.files = vec![crate::effects::read_drill(path)];
    h.keys("3");
    let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
    terminal.draw(|f| super::render(&h.app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    // The colour of the last cell of `text` on the first row it starts
    // (the pane's border is column 0).
    let colour_of = |text: &str| {
        (0..40u16)
            .find_map(|y| {
                let row: String = (1..99u16).map(|x| buffer[(x, y)].symbol()).collect();
                row.starts_with(text)
                    .then(|| buffer[(text.len() as u16, y)].fg)
            })
            .unwrap_or_else(|| panic!("no row starts with {text:?}"))
    };
    assert_eq!(colour_of("naive_retry "), Color::Red);
    assert_eq!(colour_of("verdicts: "), Color::Red);
    assert_eq!(colour_of("  error   naive_retry"), Color::Red);
    assert_ne!(colour_of("stable_key "), Color::Red);
    assert_ne!(colour_of("  note    naive_retry"), Color::Red);
}

/// Scrolling the Drills view goes through the same cursor as the lists
/// and stops at the last line.
#[test]
fn drills_scroll_and_stop_at_the_end() {
    let mut h = sized(100, 30);
    let path = std::path::Path::new("sample-data/drill-results.json");
    h.app.drills.files = vec![crate::effects::read_drill(path)];
    h.keys("3 j j");
    assert_eq!(h.app.drills.scroll, 2);
    h.keys("pgdn pgdn pgdn pgdn pgdn");
    let at_end = h.app.drills.scroll;
    h.keys("j");
    assert_eq!(h.app.drills.scroll, at_end);
    assert!(at_end > 2);
    h.keys("k");
    assert_eq!(h.app.drills.scroll, at_end - 1);
}

#[test]
fn read_only_header() {
    let mut h = sized(100, 24);
    h.app.read_only = true;
    h.keys("a");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn no_color_uses_no_colour() {
    use ratatui::style::Color;
    let mut h = sized(100, 30);
    h.app.color = false;
    h.keys("enter j n");
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
    terminal.draw(|f| super::render(&h.app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    let coloured = buffer
        .content()
        .iter()
        .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
        .count();
    assert_eq!(coloured, 0);
    // With colour, states are coloured: the test above can fail.
    h.app.color = true;
    terminal.draw(|f| super::render(&h.app, f)).unwrap();
    assert!(
        terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.fg != Color::Reset)
    );
}

#[test]
fn tiny_terminals_do_not_panic() {
    for (w, h) in [(1, 1), (10, 3), (20, 5), (30, 8)] {
        let mut harness = sized(w, h);
        for script in ["enter", "a", "?", "esc esc 3", "4"] {
            harness.keys(script);
            draw(&harness.app, w, h);
        }
    }
}

#[test]
fn a_version_conflict_in_the_status_line() {
    let mut h = sized(100, 16);
    h.keys("a");
    let draft = crate::domain::DecisionDraft {
        op_id: crate::domain::OperationId(7),
        kind: crate::domain::DecisionKind::NotApplied,
        result_id: None,
        evidence: Some("provider says no".into()),
        note: Some("checked".into()),
        override_committed: true,
        operator: "bob".into(),
        expected_version: 0,
        undoes: None,
    };
    h.ledger
        .record_decision(&draft, crate::app::testkit::now())
        .unwrap();
    h.keys("enter");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn header_says_not_live_when_polling_fails() {
    let mut h = sized(100, 12);
    h.receive(Msg::LiveLost("disk I/O error".into()));
    let text = snap(&h);
    assert!(
        text.lines().next().unwrap().contains("✕ not live"),
        "{text}"
    );
    assert!(!text.contains("● live"), "{text}");
}

mod hostile_text;
