//! Probing from the keys: what `p` asks the shell to
//! run, the progress line as answers arrive, the count confirmed before
//! every matching row is probed, and the decision form starting from the
//! newest probe without lifting any rule.

use crate::app::probe::{ProbeNews, Probing};
use crate::app::testkit::Harness;
use crate::app::*;
use crate::domain::{NewProbe, OperationId, ProbeOutcome};

fn asked_probe(effects: &[Effect]) -> Option<Vec<OperationId>> {
    effects.iter().find_map(|e| match e {
        Effect::Probe(ids) => Some(ids.clone()),
        _ => None,
    })
}

fn status(h: &Harness) -> String {
    h.app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn probed(op: OperationId, outcome: ProbeOutcome) -> Msg {
    Msg::Probe(ProbeNews::Probed {
        op,
        outcome,
        recorded: Ok(()),
    })
}

/// Records a probe of `op` as the prober would.
fn record(h: &mut Harness, op: OperationId, outcome: ProbeOutcome, result_id: Option<&str>) {
    let key = h.ledger.detail(op).unwrap().operation.idem_key;
    h.ledger
        .record_probe(&NewProbe {
            op_id: op,
            idem_key: key,
            command: "/bin/lookup acme".into(),
            outcome,
            result_id: result_id.map(str::to_string),
            exit: if outcome == ProbeOutcome::NotFound {
                "exit 3".into()
            } else {
                "exit 0".into()
            },
            output: result_id.map(str::to_string),
            operator: "alice".into(),
            probed_at: "2026-11-06T11:59:00Z".into(),
            duration_ms: 12,
        })
        .unwrap();
}

#[test]
fn p_probes_the_selected_row_and_the_status_line_counts_the_answers() {
    let mut h = Harness::new();
    let selected = h.app.decision_targets();
    let asked = asked_probe(&update(&mut h.app, Intent::Probe));
    assert_eq!(asked, Some(selected.clone()));
    assert_eq!(status(&h), "probing 0/1");

    apply(&mut h.app, probed(selected[0], ProbeOutcome::Found));
    assert_eq!(status(&h), "probing 1/1 · 1 found");
    // Keys keep working while it runs; a second probe waits its turn.
    h.keys("j");
    let again = update(&mut h.app, Intent::Probe);
    assert!(asked_probe(&again).is_none());
    assert!(
        status(&h).starts_with("still probing 1/1"),
        "{}",
        status(&h)
    );

    apply(
        &mut h.app,
        Msg::Probe(ProbeNews::Finished { stopped: None }),
    );
    assert_eq!(status(&h), "probed 1 of 1 · 1 found");
    assert!(h.app.probing.is_none());
}

#[test]
fn p_on_marked_rows_probes_exactly_those_and_rereads_the_open_detail() {
    let mut h = Harness::new();
    h.keys("space space");
    let marked = h.app.decision_targets();
    assert_eq!(marked.len(), 2);
    let asked = asked_probe(&update(&mut h.app, Intent::Probe));
    assert_eq!(asked, Some(marked.clone()));

    h.keys("enter");
    let shown = h.app.detail.as_ref().unwrap().id;
    let effects = apply(&mut h.app, probed(shown, ProbeOutcome::Unknown));
    assert_eq!(effects, vec![Effect::Read(Read::LoadDetail(shown))]);
    assert_eq!(status(&h), "probing 1/2 · 1 unknown");
}

#[test]
fn every_matching_row_is_probed_only_after_a_second_p_with_the_count_shown() {
    let mut h = Harness::new();
    h.keys("*");
    // `act` performs the listing on the ledger, as the reader would.
    h.act(Intent::Probe);
    let Some(Probing::Confirm { ids, .. }) = &h.app.probing else {
        panic!("not asking to confirm: {:?}", h.app.probing);
    };
    let n = ids.len();
    assert_eq!(Some(n as i64), h.app.queue.count);
    assert!(
        status(&h).starts_with(&format!(
            "probe all {n} rows matching this list? p runs {n}"
        )),
        "{}",
        status(&h)
    );
    let asked = asked_probe(&update(&mut h.app, Intent::Probe)).unwrap();
    assert_eq!(asked.len(), n);

    // Any other key drops a confirmation: nothing runs.
    let mut h = Harness::new();
    h.keys("*");
    h.act(Intent::Probe);
    let effects = h.keys("j");
    assert!(asked_probe(&effects).is_none());
    assert!(h.app.probing.is_none());
    assert_eq!(status(&h), "probe cancelled: no lookup ran");
}

#[test]
fn a_read_only_console_refuses_p_saying_why() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    assert!(update(&mut h.app, Intent::Probe).is_empty());
    let s = h.app.status.clone().unwrap();
    assert!(
        s.error && s.text.contains("needs a writable ledger"),
        "{s:?}"
    );
}

#[test]
fn a_found_probe_starts_applied_with_its_result_id_and_cites_the_probe() {
    let mut h = Harness::new();
    // The first row has a committed event naming report-1: the receiver's
    // newer answer is what the form starts from.
    let op = h.app.decision_targets()[0];
    record(&mut h, op, ProbeOutcome::Found, Some("report-77"));
    h.keys("a");
    let form = h.app.form().unwrap();
    assert_eq!(form.result_id, "report-77");
    assert!(
        form.evidence.starts_with("probe 1 at 2026-11-06T11:59:00Z by alice: lookup `/bin/lookup acme` exit 0: found the effect, result id report-77"),
        "{}",
        form.evidence
    );
    let drafts = match h.keys("enter").into_iter().find_map(|e| match e {
        Effect::Write(Write::Decisions(d)) => Some(d),
        _ => None,
    }) {
        Some(d) => d,
        None => panic!("nothing recorded: {:?}", h.app.form()),
    };
    assert_eq!(drafts[0].result_id.as_deref(), Some("report-77"));
}

#[test]
fn a_not_found_probe_starts_not_applied_but_a_committed_event_still_needs_the_override() {
    let mut h = Harness::new();
    let committed = h.app.decision_targets()[0];
    record(&mut h, committed, ProbeOutcome::NotFound, None);
    h.keys("n");
    let evidence = h.app.form().unwrap().evidence.clone();
    assert!(
        evidence.ends_with("exit 3: the receiver has no record of the key"),
        "{evidence}"
    );
    assert!(asked_record(&h.keys("enter")).is_none());
    let problem = h.app.form().unwrap().problem.clone().unwrap();
    assert!(problem.contains("committed effect"), "{problem}");
    h.keys("esc");

    // Without a committed event the probe is enough evidence.
    h.keys("j j");
    assert_eq!(h.selected_key(), "k-order");
    let plain = h.app.decision_targets()[0];
    record(&mut h, plain, ProbeOutcome::NotFound, None);
    h.keys("n");
    assert!(
        asked_record(&h.keys("enter")).is_some(),
        "{:?}",
        h.app.form()
    );
}

#[test]
fn only_the_newest_probe_counts_and_an_unknown_one_fills_nothing() {
    let mut h = Harness::new();
    h.keys("j j");
    let op = h.app.decision_targets()[0];
    record(&mut h, op, ProbeOutcome::Found, Some("report-77"));
    record(&mut h, op, ProbeOutcome::Unknown, None);
    h.keys("a");
    let form = h.app.form().unwrap();
    assert_eq!(form.result_id, "");
    assert_eq!(form.evidence, "");
}

fn asked_record(effects: &[Effect]) -> Option<()> {
    effects
        .iter()
        .any(|e| matches!(e, Effect::Write(Write::Decisions(_))))
        .then_some(())
}
