//! Snapshots of the Drills view's comparison across runs (`v`) and of a
//! drill case linked to the operation its import wrote.

use super::{colourful_cells, sized, snap};
use crate::app::testkit::{Harness, two_runs};

fn comparing(width: u16, height: u16, dir: &std::path::Path) -> Harness {
    let mut h = sized(width, height);
    h.app.drills.files = two_runs(dir);
    h.keys("3 v");
    h
}

#[test]
fn drill_comparison_80x24() {
    let dir = tempfile::tempdir().unwrap();
    let h = comparing(80, 24, dir.path());
    let frame = snap(&h);
    // The news is in the title and on the first rows, before any scroll.
    assert!(frame.contains("1 regression"), "{frame}");
    let first = frame.lines().find(|l| l.contains("stable_key")).unwrap();
    assert!(
        first.contains("regression") && first.contains("duplicate"),
        "{frame}"
    );
    insta::assert_snapshot!(frame);
}

#[test]
fn drill_comparison_160x48() {
    let dir = tempfile::tempdir().unwrap();
    let h = comparing(160, 48, dir.path());
    let frame = snap(&h);
    assert!(
        frame.contains("before.json") && frame.contains("after.json"),
        "{frame}"
    );
    insta::assert_snapshot!(frame);
}

#[test]
fn drill_comparison_80x24_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = comparing(80, 24, dir.path());
    h.app.color = false;
    assert_eq!(colourful_cells(&h, 80, 24), 0);
    insta::assert_snapshot!(snap(&h));
}

#[test]
fn an_imported_case_says_where_it_is_in_the_ledger_and_the_operation_says_its_case() {
    let sample = std::path::Path::new("sample-data/drill-results.json");
    let (file, _) = crate::drill::load(sample).unwrap();
    let plan = crate::drill::import_plan(&file, "drill-results");
    let mut h = sized(160, 48);
    h.ledger.import(&plan, &[]).unwrap();
    h.app.drills.files = vec![crate::console::effects::read_drill(sample)];
    h.keys("3 enter");
    let frame = snap(&h);
    assert!(frame.contains("in the ledger: #"), "{frame}");
    insta::assert_snapshot!(frame);
    h.keys("o");
    let frame = snap(&h);
    assert!(
        frame.contains("from drill case drill-results.json/naive_retry"),
        "{frame}"
    );
}
