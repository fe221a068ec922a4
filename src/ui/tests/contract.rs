//! The contract line: the detail and the decision form say how the op
//! type's contract is known, declared by `op_types` or drilled on a date
//! with the run, read from the ledger's latest drill verdict.

use super::frame;
use crate::app::Msg;
use crate::app::testkit::Harness;
use crate::domain::{Declarations, DrillVerdict};

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

/// The fixture with its orders made a job queue's `charge` task, which no
/// `op_types` row declares, and a receivers file declaring it idempotent
/// with keys kept a day; the same file calls `create_report` not
/// idempotent, against its row.
fn declared_in_the_file(width: u16, height: u16) -> Harness {
    let mut ops = crate::app::testkit::fixture();
    for op in ops.iter_mut().filter(|op| op.op_type == "place_order") {
        op.op_type = "charge".into();
    }
    let mut h = Harness::with(&ops);
    let mut declared = Declarations::new("/etc/settle/receivers.toml");
    declared.declare("charge", Some(true), Some(86_400));
    declared.declare("create_report", Some(false), None);
    h.ledger.declare(declared);
    h.receive(Msg::LedgerChanged);
    h.receive(Msg::Resize(width, height));
    h
}

#[test]
fn the_detail_and_the_form_say_the_file_declared_the_contract() {
    let mut h = declared_in_the_file(160, 45);
    h.keys("j j enter");
    let detail = frame(&h);
    assert!(
        detail.contains("proof       declared by /etc/settle/receivers.toml (never drilled)"),
        "{detail}"
    );
    assert!(
        detail.contains("idempotent (honours keys), keeps keys 1d"),
        "{detail}"
    );
    insta::assert_snapshot!("detail_declared_by_the_file", detail);

    let mut h = declared_in_the_file(100, 30);
    h.keys("space j space j space a");
    let form = frame(&h);
    for line in [
        "contract of charge: declared by /etc/settle/receivers.toml (never drilled)",
        "contract of create_report: declared by op_types and by /etc/settle/receivers.toml; the",
    ] {
        assert!(form.contains(line), "{line} missing from:\n{form}");
    }
    insta::assert_snapshot!("form_declared_by_the_file", form);
}

#[test]
fn the_retry_form_passes_the_contract_on_the_file_s_word() {
    let mut h = declared_in_the_file(100, 30);
    h.keys("j j r");
    let form = frame(&h);
    assert!(form.contains("charge honours idempotency keys"), "{form}");
    // The row of create_report says idempotent; the file says not: refused.
    let mut h = declared_in_the_file(100, 30);
    h.keys("r");
    let form = frame(&h);
    assert!(
        form.contains("create_report is not verified idempotent"),
        "{form}"
    );
}
