//! A case where several callers ran at once: their attempts side by side,
//! one column per caller on one time axis, above the attempt list; a case
//! of one caller (the reference drill's) keeps the list alone.

use super::{sized, snap};
use crate::app::testkit::Harness;

/// `settle drill run`'s results (the concurrent case and the lost
/// response) against the reference receiver, its first case open.
fn concurrent(width: u16, height: u16) -> Harness {
    let file = std::path::Path::new("tests/fixtures/drill/concurrent-callers.json");
    let mut h = sized(width, height);
    h.app.drills.files = vec![crate::console::effects::read_drill(file)];
    h.keys("3 enter");
    h
}

#[test]
fn each_caller_has_a_column_on_one_time_axis_160x48() {
    let h = concurrent(160, 48);
    let frame = snap(&h);
    let header = frame
        .lines()
        .find(|l| l.contains("caller 1"))
        .unwrap_or_else(|| panic!("no callers' header:\n{frame}"));
    for c in ["caller 2", "caller 3", "caller 4"] {
        assert!(header.contains(c), "{c} not beside caller 1: {header}");
    }
    // All four called before any was answered: the first row holds a
    // call in the first column, and every caller's call is on screen.
    let first = frame.lines().find(|l| l.contains("+0ms")).unwrap();
    assert!(first.contains("#1 call"), "{first}");
    for n in 2..=4 {
        assert!(frame.contains(&format!("#{n} call")), "{frame}");
    }
    // Each was answered with the one effect's id, in its own column.
    assert_eq!(frame.matches("→ rcv-000001").count(), 4, "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn the_columns_share_a_narrow_pane_80x24() {
    let mut h = concurrent(80, 24);
    h.keys("J J J J");
    let frame = snap(&h);
    assert!(frame.contains("caller 4"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn a_case_of_one_caller_has_no_columns() {
    let mut h = concurrent(160, 48);
    h.keys("j");
    let frame = snap(&h);
    assert!(frame.contains("case lost_response"), "{frame}");
    assert!(!frame.contains("callers side by side"), "{frame}");
}
