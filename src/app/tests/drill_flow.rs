//! Drilling from the keys: what `D` asks the shell to run, the progress
//! line as cases start, Esc cancelling a run (a second press means Esc
//! again), the end said on the status line, and the refusals.

use crate::app::drills::running::{DrillEnd, DrillNews};
use crate::app::testkit::Harness;
use crate::app::*;

fn asked_drill(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|e| match e {
        Effect::Drill(op_type) => Some(op_type.clone()),
        _ => None,
    })
}

fn status(h: &Harness) -> (String, bool) {
    h.app
        .status
        .as_ref()
        .map(|s| (s.text.clone(), s.error))
        .unwrap_or_default()
}

fn case(index: usize, name: &str) -> Msg {
    Msg::Drill(DrillNews::Case {
        index,
        total: 13,
        case: name.into(),
    })
}

#[test]
fn d_drills_the_rows_op_type_with_progress_and_the_end_on_the_status_line() {
    let mut h = Harness::new();
    let effects = h.keys("D");
    assert_eq!(asked_drill(&effects).as_deref(), Some("create_report"));
    assert_eq!(
        status(&h).0,
        "drilling create_report: starting · esc cancels"
    );

    h.receive(case(2, "stable_key"));
    h.receive(Msg::Drill(DrillNews::CaseDone {
        passed: Some(false),
    }));
    h.receive(case(7, "concurrent_same_key"));
    assert_eq!(
        status(&h).0,
        "drilling create_report: case 7 of 13 (concurrent_same_key) · 1 failed · esc cancels"
    );
    // One run at a time.
    assert_eq!(asked_drill(&h.keys("D")), None);
    assert!(status(&h).0.starts_with("still drilling create_report"));

    h.receive(Msg::Drill(DrillNews::Finished(Ok(DrillEnd {
        verdict: "create_report: no flaw found".into(),
        results: "/srv/drills/drill-1/drill-results.json".into(),
        interrupted: false,
        recorded: Ok(3),
    }))));
    assert_eq!(
        status(&h),
        (
            "drilled create_report: no flaw found: results drill-1/drill-results.json; \
             recorded as drill verdict 3"
                .into(),
            false
        )
    );
    assert!(h.app.drills.running.is_none());
    assert_eq!(
        asked_drill(&h.keys("D")).as_deref(),
        Some("create_report"),
        "another run may start"
    );
}

#[test]
fn esc_or_ctrl_c_cancels_a_run_and_a_second_press_means_the_key_again() {
    let mut h = Harness::new();
    h.keys("enter D");
    assert!(h.app.detail_open);
    let effects = h.keys("esc");
    assert!(effects.contains(&Effect::CancelDrill), "{effects:?}");
    assert!(h.app.detail_open, "esc went to the drill, not the detail");
    assert!(
        status(&h)
            .0
            .starts_with("cancelling the drill of create_report")
    );
    // The calls are being killed; news no longer moves the line.
    h.receive(case(3, "fault_before_effect"));
    assert!(status(&h).0.starts_with("cancelling"));
    assert!(!h.keys("esc").contains(&Effect::CancelDrill));
    assert!(!h.app.detail_open, "the second esc closes the detail");

    h.receive(Msg::Drill(DrillNews::Finished(Ok(DrillEnd {
        verdict: "create_report: no flaw found".into(),
        results: "out/drill-2/drill-results.json".into(),
        interrupted: true,
        recorded: Err("cancelled".into()),
    }))));
    assert!(status(&h).0.starts_with("drill of create_report cancelled"));

    h.keys("D");
    assert!(h.keys("ctrl-c").contains(&Effect::CancelDrill));
    assert!(!h.app.quit, "ctrl-c stopped the drill, not the console");
    h.keys("ctrl-c");
    assert!(h.app.quit, "a second ctrl-c quits");
}

#[test]
fn a_run_that_cannot_start_says_why_as_an_error() {
    let mut h = Harness::new();
    h.keys("D");
    h.receive(Msg::Drill(DrillNews::Finished(Err(
        "receivers.toml: no receiver for op type create_report".into(),
    ))));
    assert_eq!(
        status(&h),
        (
            "drill of create_report not run: receivers.toml: no receiver for op type \
             create_report"
                .into(),
            true
        )
    );
    assert!(h.app.drills.running.is_none());
}

#[test]
fn read_only_nothing_is_drilled_and_the_drills_view_offers_no_d() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    assert_eq!(asked_drill(&h.keys("D")), None);
    assert!(!Intent::Drill.acts_in(View::Drills));
    assert!(Intent::Drill.decides());
}
