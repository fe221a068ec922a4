//! The contract line: the detail and the decision form say how the op
//! type's contract is known, declared by `op_types` or drilled on a date
//! with the run, read from the ledger's latest drill verdict.

use super::frame;
use crate::app::Msg;
use crate::app::testkit::Harness;
use crate::domain::DrillVerdict;

/// The fixture's ledger, its `create_report` drilled once with a race
/// found and once clean afterwards: the latest run is the one shown.
fn drilled(width: u16, height: u16) -> Harness {
    let mut h = Harness::new();
    for (run, duplicate) in [("20261130T090000000", true), ("20261201T101500000", false)] {
        h.ledger
            .record_drill(&DrillVerdict {
                id: 0,
                op_type: "create_report".into(),
                run: run.into(),
                drilled_at: format!("{}-{}-{}T10:15:00+00:00", &run[..4], &run[4..6], &run[6..8]),
                results: format!("/srv/drills/drill-{run}/drill-results.json"),
                duplicate_case: duplicate.then(|| "concurrent_same_key".into()),
                duplicate_why: duplicate.then(|| "2 effects under key k".into()),
                params_ignored: false,
                flaws: String::new(),
                operator: "ana".into(),
            })
            .unwrap();
    }
    h.receive(Msg::LedgerChanged);
    h.receive(Msg::Resize(width, height));
    h
}

#[test]
fn the_detail_says_the_contract_was_drilled_with_the_run() {
    let mut h = drilled(160, 45);
    h.keys("enter");
    let shown = frame(&h);
    assert!(
        shown.contains("proof       drilled on 2026-12-01 (run 20261201T101500000): no flaw"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}

#[test]
fn the_form_says_the_contract_was_drilled_and_an_undrilled_one_declared() {
    let mut h = drilled(100, 30);
    h.keys("space j space j space a");
    let shown = frame(&h);
    assert!(
        shown.contains("drill-20261201T101500000/drill-results.json"),
        "{shown}"
    );
    assert!(
        shown.contains("contract of place_order: declared by op_types (never drilled)"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}
