//! Whole-frame snapshots of every view, pane and popup, drawn from a temp
//! ledger through the same key scripts an operator would type.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::testkit::{Harness, fixture};
use crate::app::{App, LedgerAccess, LoadedDrill, Msg};
use crate::domain::NewOperation;

/// The frame as text, one line per row, trailing spaces trimmed.
pub(crate) fn draw(app: &App, width: u16, height: u16) -> String {
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

/// The harness's frame at its own size, as text.
pub(crate) fn frame(h: &Harness) -> String {
    draw(&h.app, h.app.size.0, h.app.size.1)
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
fn queue_sorted_by_attempts_says_so_in_the_title() {
    let mut h = sized(80, 24);
    h.keys("j j s s s");
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
fn help_says_what_the_mouse_does_only_while_the_console_takes_it() {
    let mut h = sized(100, 45);
    h.keys("?");
    assert!(snap(&h).contains("shift+drag selects text"));
    h.app.mouse = false;
    assert!(!snap(&h).contains("mouse:"), "{}", snap(&h));
}

#[test]
fn filter_with_a_parse_error() {
    let mut h = sized(100, 24);
    h.keys("/");
    h.type_text("acme \"x");
    insta::assert_snapshot!(snap(&h));
}

/// The export prompt: the prefilled name and which rows Enter writes.
#[test]
fn export_prompt_with_marks_80x24() {
    let mut h = sized(80, 24);
    h.keys("space j space e");
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn export_prompt_160x48_no_color() {
    let mut h = sized(160, 48);
    h.app.color = false;
    h.keys("2 e");
    assert_eq!(colourful_cells(&h, 160, 48), 0);
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

/// The sample drill and a file that cannot be read, as `--drill` loads them.
fn with_drills(width: u16, height: u16) -> Harness {
    let mut h = sized(width, height);
    let path = std::path::Path::new("sample-data/drill-results.json");
    h.app.drills.files = vec![
        crate::console::effects::read_drill(path),
        LoadedDrill::new(
            "runs/missing.json".into(),
            Err("runs/missing.json: cannot read: No such file or directory".into()),
        ),
    ];
    h.keys("3");
    h
}

#[test]
fn drills_80x24() {
    let h = with_drills(80, 24);
    let frame = snap(&h);
    // Each case is one row: its verdict on the case's own line.
    let naive = frame.lines().find(|l| l.contains("naive_retry")).unwrap();
    assert!(naive.contains("duplicate effect"), "{frame}");
    assert!(frame.contains("cannot read"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn drills_160x48() {
    let h = with_drills(160, 48);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn drills_80x24_no_color() {
    let mut h = with_drills(80, 24);
    h.app.color = false;
    h.keys("3 j enter");
    assert_eq!(colourful_cells(&h, 80, 24), 0);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn drill_case_below_the_list_at_80x24() {
    let mut h = with_drills(80, 24);
    h.keys("j enter");
    let frame = snap(&h);
    assert!(frame.contains("case changed_key"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn drill_case_beside_the_list_at_160x48() {
    let mut h = with_drills(160, 48);
    h.keys("enter");
    let frame = snap(&h);
    for seen in [
        "attempt 2",
        "effect_id report-1",
        "report-2",
        "Findings",
        "Expectation",
    ] {
        assert!(frame.contains(seen), "{seen} missing:\n{frame}");
    }
    insta::assert_snapshot!(frame);
}

#[test]
fn drill_case_160x48_no_color() {
    let mut h = with_drills(160, 48);
    h.app.color = false;
    h.keys("enter");
    assert_eq!(colourful_cells(&h, 160, 48), 0);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn an_unreadable_drill_file_says_why_when_opened() {
    let mut h = with_drills(80, 24);
    h.keys("G enter");
    let frame = snap(&h);
    assert!(frame.contains("unreadable drill file"), "{frame}");
    assert!(frame.contains("No such file or directory"), "{frame}");
}

/// Drill text is untrusted: escapes in a case's name, title, event words
/// and effect ids are shown as symbols in the list and the open case.
#[test]
fn hostile_drill_text_is_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.json");
    let evil = "\\u001b[31mred\\u0007";
    let json = format!(
        r#"{{"passed": true, "cases": [{{"case": "c{evil}", "title": "t{evil}", "strategy": "s{evil}",
           "attempts": [{{"attempt": 1, "key": "k{evil}", "result": "success"}}],
           "events": [{{"seq": 1, "attempt": 1, "event": "committed{evil}", "effect_id": "e{evil}"}}],
           "final_state": {{"effects": [{{"id": "e{evil}", "key": "k{evil}"}}], "keys": {{}}}}}}]}}"#
    );
    std::fs::write(&path, json).unwrap();
    let mut h = sized(160, 48);
    h.app.drills.files = vec![crate::console::effects::read_drill(&path)];
    h.keys("3 enter");
    // `snap` fails on any escape reaching the frame.
    let frame = snap(&h);
    assert!(frame.contains("c␛[31mred"), "{frame}");
    assert!(frame.contains("committed␛[31mred"), "{frame}");
}

/// Cells drawn with a colour: none under NO_COLOR.
fn colourful_cells(h: &Harness, width: u16, height: u16) -> usize {
    use ratatui::style::Color;
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::render(&h.app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    buffer
        .content()
        .iter()
        .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
        .count()
}

/// The verdict's colour comes from the analysis: a duplicate is red, a
/// safe case green, whatever the case is called.
#[test]
fn drill_verdicts_are_coloured_from_the_analysis() {
    use ratatui::style::Color;
    let h = with_drills(100, 30);
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
    terminal.draw(|f| super::render(&h.app, f)).unwrap();
    let buffer = terminal.backend().buffer();
    // The colour of the first cell of `verdict` on the row of `case`.
    let colour_of = |case: &str, verdict: &str| {
        (0..30u16)
            .find_map(|y| {
                let row: String = (0..100u16).map(|x| buffer[(x, y)].symbol()).collect();
                let at = row.find(verdict)?;
                row.contains(case)
                    .then(|| buffer[(row[..at].chars().count() as u16, y)].fg)
            })
            .unwrap_or_else(|| panic!("no row of {case} says {verdict}"))
    };
    assert_eq!(colour_of("naive_retry", "duplicate effect"), Color::Red);
    assert_eq!(colour_of("stable_key", "safe"), Color::Green);
    assert_ne!(colour_of("stable_key", "safe"), Color::Red);
}

/// The footer of every view, read-write and read-only: each offers only
/// the keys that act there (wide enough for all of them: how the footer
/// ranks keys when it is narrower is `footer_width`'s).
#[test]
fn footer_per_view() {
    let mut h = with_drills(160, 12);
    let mut out = String::new();
    for read_only in [false, true] {
        h.app.access = if read_only {
            LedgerAccess::ReadOnly
        } else {
            LedgerAccess::ReadWrite
        };
        for (key, view) in [
            ("1", "queue"),
            ("2", "all"),
            ("3", "drills"),
            ("4", "audit"),
        ] {
            h.keys(key);
            let frame = snap(&h);
            let footer = frame.lines().last().unwrap_or_default().to_string();
            let decides = footer.contains("applied") || footer.contains("mark");
            let lists = matches!(view, "queue" | "all");
            assert_eq!(
                decides,
                lists && !read_only,
                "{view} read-only={read_only}: {footer}"
            );
            // The lists and the drills sort; the audit trail has one order.
            assert_eq!(footer.contains("sort"), view != "audit", "{view}: {footer}");
            out.push_str(&format!("{view:<6} ro={read_only:<5} {footer}\n"));
        }
    }
    insta::assert_snapshot!(out);
}

/// Help in the Drills view lists what acts there and no decision key.
#[test]
fn help_in_the_drills_view_offers_no_decision() {
    let mut h = with_drills(100, 45);
    h.keys("?");
    let text = snap(&h);
    assert!(text.contains("sort the rows by the next column"), "{text}");
    for absent in [
        "record applied",
        "mark or unmark",
        "undo my last",
        "reverse the operations",
    ] {
        assert!(!text.contains(absent), "{absent} in drills help:\n{text}");
    }
    h.keys("esc 1 ?");
    assert!(snap(&h).contains("record applied"));
}

#[test]
fn read_only_header() {
    let mut h = sized(100, 24);
    h.app.access = LedgerAccess::ReadOnly;
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

mod catching_up;
mod contract;
mod drill_callers;
mod drill_compare;
mod footer_width;
mod header_width;
mod hostile_text;
mod read_only_reason;
mod retry_progress;
mod scan;
mod timeline;

/// The Clusters view: the fixture's queue grouped, the cursor on the
/// biggest receiver, the evil account's escape made visible.
fn clusters(width: u16, height: u16, color: bool) -> String {
    let mut h = sized(width, height);
    h.app.color = color;
    h.keys("5");
    if !color {
        assert_eq!(colourful_cells(&h, width, height), 0);
    }
    let frame = snap(&h);
    for seen in [
        "create_report",
        "evil␛[31m",
        "provider timeout",
        "filter queue",
    ] {
        assert!(frame.contains(seen), "{seen} missing:\n{frame}");
    }
    frame
}

#[test]
fn clusters_80x24() {
    insta::assert_snapshot!(clusters(80, 24, true));
}

#[test]
fn clusters_160x48() {
    insta::assert_snapshot!(clusters(160, 48, true));
}

#[test]
fn clusters_80x24_no_color() {
    insta::assert_snapshot!(clusters(80, 24, false));
}

#[test]
fn clusters_160x48_no_color() {
    insta::assert_snapshot!(clusters(160, 48, false));
}

/// The bulk form after `*` and `n` with evidence typed and a wrong count:
/// the sample, the rules judged per row grouped, and the count to type.
fn bulk_form(width: u16, height: u16, color: bool) -> String {
    let mut h = sized(width, height);
    h.app.color = color;
    h.keys("/");
    h.type_text("type:create_report");
    h.keys("enter * n");
    h.type_text("provider confirms no effect");
    h.keys("enter tab tab");
    h.type_text("2");
    if !color {
        assert_eq!(colourful_cells(&h, width, height), 0);
    }
    snap(&h)
}

#[test]
fn bulk_form_80x24() {
    insta::assert_snapshot!(bulk_form(80, 24, true));
}

#[test]
fn bulk_form_160x48_no_color() {
    insta::assert_snapshot!(bulk_form(160, 48, false));
}

/// PostgreSQL estimates the total and the big states of a large ledger:
/// those numbers carry `≈`, the queue's exact ones do not.
#[test]
fn estimated_counts_carry_an_approximately_sign() {
    let mut h = sized(140, 24);
    let mut counts = h.app.counts.clone().unwrap();
    let exact = frame(&h);
    assert!(!exact.contains('≈'), "{exact}");
    counts.estimated = true;
    let all = h.app.list(crate::app::ListId::All).query.clone();
    let lists = vec![(crate::app::ListId::All, all, counts.total)];
    h.receive(Msg::CountsLoaded { counts, lists });
    let frame = frame(&h);
    let tabs = frame.lines().nth(1).unwrap();
    assert!(tabs.contains("All ≈"), "{tabs}");
    assert!(tabs.contains("completed ≈"), "{tabs}");
    assert!(tabs.contains("unknown 2"), "{tabs}");
}
