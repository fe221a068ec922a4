//! Update tests for the Drills view's comparison across runs, a case's
//! link to its imported operation and back, and drill files arriving
//! from a watched folder.

use crate::app::drills::compare::CaseChange;
use crate::app::testkit::{Harness, loaded, two_runs};
use crate::app::{Msg, View};
use crate::domain::OperationId;

fn compared(h: &Harness) -> Vec<(String, CaseChange, Vec<Option<&'static str>>)> {
    h.app
        .drills
        .compared()
        .1
        .into_iter()
        .map(|c| {
            let verdicts = c.verdicts.iter().map(|v| v.map(|v| v.as_str())).collect();
            (c.case, c.change, verdicts)
        })
        .collect()
}

#[test]
fn v_compares_the_runs_and_lists_what_changed_loudest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new();
    h.app.drills.files = two_runs(dir.path());
    h.keys("3 v");
    assert!(h.app.drills.compare);
    let rows = compared(&h);
    let head: Vec<(&str, CaseChange)> = rows
        .iter()
        .take(3)
        .map(|(case, change, _)| (case.as_str(), *change))
        .collect();
    assert_eq!(
        head,
        [
            ("stable_key", CaseChange::Regression),
            ("naive_retry", CaseChange::Fixed),
            ("later_invocation", CaseChange::Missing),
        ]
    );
    assert_eq!(
        rows[0].2,
        [Some("safe"), Some("duplicate effect")],
        "the verdict of each run, side by side"
    );
    assert_eq!(rows[2].2, [Some("safe"), None]);
    assert!(
        rows[3..].iter().all(|r| r.1 == CaseChange::Same),
        "{rows:?}"
    );
    assert_eq!(rows.len(), 7, "one row per case name, not per run");
}

#[test]
fn enter_on_a_compared_case_opens_it_in_the_last_run_and_v_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new();
    h.app.drills.files = two_runs(dir.path());
    h.keys("3 v j j");
    assert_eq!(
        h.app.drills.cursor, 2,
        "the cursor moves over compared cases"
    );
    h.keys("k enter");
    let d = &h.app.drills;
    assert!(!d.compare && d.open);
    let row = d.selected().unwrap();
    assert_eq!(d.files[row.file].run_name(), "after.json");
    assert_eq!(d.case_analysis(row).unwrap().case, "naive_retry");
    h.keys("v v");
    assert!(!h.app.drills.compare, "v twice: back to the cases");
    h.keys("v esc");
    assert!(!h.app.drills.compare, "esc leaves the comparison too");
}

#[test]
fn comparing_one_run_says_it_needs_two() {
    let mut h = Harness::new();
    h.app.drills.files = vec![loaded(std::path::Path::new(
        "sample-data/drill-results.json",
    ))];
    h.keys("3 v");
    assert!(!h.app.drills.compare);
    let status = h.app.status.as_ref().map(|s| s.text.clone());
    assert!(status.unwrap().contains("needs two drill runs"));
}

#[test]
fn an_imported_case_links_to_its_operation_and_o_opens_it_in_all() {
    let sample = std::path::Path::new("sample-data/drill-results.json");
    let sample_drill = loaded(sample);
    let (file, _) = crate::drill::load(sample).unwrap();
    let plan = crate::drill::import_plan(&file, "drill-results");
    let mut h = Harness::new();
    h.ledger.import(&plan, &[]).unwrap();
    h.app.drills.files = vec![sample_drill];
    // changed_key: the second case.
    h.keys("3 j enter");
    let row = h.app.drills.selected().unwrap();
    let Some(Some(id)) = h.app.drills.link(row) else {
        panic!("not linked: {:?}", h.app.drills.links);
    };
    h.keys("o");
    assert_eq!(h.app.view, View::All);
    assert!(h.app.detail_open);
    let detail = h
        .app
        .detail
        .as_ref()
        .and_then(|d| d.detail.as_ref())
        .unwrap();
    assert_eq!(detail.operation.id, id);
    assert_eq!(detail.operation.idem_key, "run-002-a");
    assert_eq!(
        h.selected_key(),
        "run-002-a",
        "the list holds that operation"
    );
    // And back: the operation knows its case.
    assert_eq!(
        h.app
            .drills
            .case_of_operation("acct-drill", "create_report", "run-002-a"),
        Some("drill-results.json/changed_key".to_string())
    );
}

#[test]
fn a_case_the_ledger_does_not_hold_says_so_and_o_stays() {
    let mut h = Harness::new();
    h.app.drills.files = vec![loaded(std::path::Path::new(
        "sample-data/drill-results.json",
    ))];
    h.keys("3 enter");
    let row = h.app.drills.selected().unwrap();
    assert_eq!(h.app.drills.link(row), Some(None));
    h.keys("o");
    assert_eq!(h.app.view, View::Drills);
    assert!(h.app.status.as_ref().is_some_and(|s| s.error));

    // Imported meanwhile: opening the case again finds it.
    let sample = std::path::Path::new("sample-data/drill-results.json");
    let (file, _) = crate::drill::load(sample).unwrap();
    let plan = crate::drill::import_plan(&file, "drill-results");
    h.ledger.import(&plan, &[]).unwrap();
    h.keys("esc enter");
    assert!(matches!(h.app.drills.link(row), Some(Some(_))));
}

#[test]
fn a_drill_file_from_the_watched_folder_joins_or_replaces_its_older_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new();
    let runs = two_runs(dir.path());
    h.keys("3");
    h.receive(Msg::DrillLoaded(Box::new(runs[0].clone())));
    h.receive(Msg::DrillLoaded(Box::new(runs[1].clone())));
    assert_eq!(h.app.drills.files.len(), 2);
    h.app
        .drills
        .links
        .insert((runs[0].path.clone(), 0), Some(OperationId(1)));
    h.receive(Msg::DrillLoaded(Box::new(runs[0].clone())));
    assert_eq!(h.app.drills.files.len(), 2, "the same path is read again");
    assert!(h.app.drills.links.is_empty(), "its links are asked again");
}
