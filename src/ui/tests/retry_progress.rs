//! A worker's progress on a retry request reaches the console through the
//! ledger's change notice alone, no key pressed: the All list's row reads
//! `retry queued`, then `retry running`, and the detail names the worker.

use std::time::Duration;

use super::frame;
use crate::app::Msg;
use crate::app::testkit::{Harness, fixture, now};
use crate::console::input::intent::{Intent, View};
use crate::domain::retry_run::{Claimed, RetryEnd, RetryRun};
use crate::domain::{DecisionDraft, DecisionKind, OperationId, State};

#[test]
fn a_workers_claim_and_finish_show_in_the_list_and_the_detail() {
    // One unknown create_report operation (an idempotent contract).
    let op = fixture()
        .into_iter()
        .find(|o| o.state == State::Unknown && o.op_type == "create_report")
        .unwrap();
    let mut h = Harness::with(&[op]);
    h.receive(Msg::Resize(200, 45));
    h.act(Intent::ShowView(View::All));
    let version = h.ledger.detail(OperationId(1)).unwrap().operation.version;
    h.ledger
        .record_decision(
            &DecisionDraft {
                op_id: OperationId(1),
                kind: DecisionKind::RetrySameKey,
                result_id: None,
                evidence: None,
                note: None,
                override_committed: false,
                operator: "alice".into(),
                expected_version: version,
                undoes: None,
            },
            now(),
        )
        .unwrap();
    h.receive(Msg::LedgerChanged);
    assert!(frame(&h).contains("retry queued"), "{}", frame(&h));

    let Some(Claimed::Run(claim)) = h
        .ledger
        .claim_retry("w1\u{1b}[2J", Duration::from_secs(60), now())
        .unwrap()
    else {
        panic!("nothing claimed")
    };
    h.receive(Msg::LedgerChanged);
    h.keys("enter");
    let shown = frame(&h);
    assert!(shown.contains("retry running"), "{shown}");
    assert!(shown.contains("claimed by w1"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "the worker's name is sanitised");

    let run = RetryRun {
        end: RetryEnd::Completed {
            result_id: "report-77".into(),
        },
        started_at: now(),
        ended_at: now(),
        command: Some("/bin/retry".into()),
        exit: "exit 0".into(),
    };
    h.ledger.finish_retry(&claim, &run, now()).unwrap();
    h.receive(Msg::LedgerChanged);
    let shown = frame(&h);
    assert!(shown.contains("done: report-77"), "{shown}");
    assert!(shown.contains("completed"), "{shown}");
}
