//! Property test of the decision transaction on a real ledger file: any
//! sequence of drafts (any kind, any operation, right or stale versions,
//! with or without evidence) either records exactly one decision and bumps
//! the version by one, or writes nothing at all. No sequence makes the store
//! panic or leave a half-written decision.

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use settle::domain::{DecisionDraft, DecisionId, DecisionKind, OperationId};

fn kind(i: u8) -> DecisionKind {
    match i % 5 {
        0 => DecisionKind::Applied,
        1 => DecisionKind::NotApplied,
        2 => DecisionKind::RetrySameKey,
        3 => DecisionKind::CancelRetry,
        _ => DecisionKind::Reopen,
    }
}

fn counts(path: &std::path::Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open(path).unwrap();
    let q = |s: &str| c.query_row(s, [], |r| r.get::<_, i64>(0)).unwrap();
    (
        q("SELECT COUNT(*) FROM decisions"),
        q("SELECT COALESCE(SUM(version), 0) FROM operations"),
        q("SELECT COUNT(*) FROM retry_requests"),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn a_decision_is_all_or_nothing(
        steps in proptest::collection::vec((1i64..16, any::<u8>(), any::<bool>(), any::<bool>(), 0i64..3, 0i64..6), 1..25)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 23, 0, 0).unwrap();
        let demo = settle::demo::build(dir.path(), now).unwrap();
        let (path, mut ledger) = (demo.ledger_path, demo.ledger);
        for (op, k, evidence, stale, version_skew, undoes) in steps {
            let id = OperationId(op);
            let current = ledger.detail(id).unwrap().operation.version;
            let draft = DecisionDraft {
                op_id: id,
                kind: kind(k),
                result_id: evidence.then(|| "res-1".to_string()),
                evidence: evidence.then(|| "seen in the provider console".to_string()),
                note: evidence.then(|| "note".to_string()),
                override_committed: evidence,
                operator: "prop".to_string(),
                expected_version: if stale { current - 1 - version_skew } else { current },
                undoes: Some(DecisionId(undoes)),
            };
            let before = counts(&path);
            match ledger.record_decision(&draft, now) {
                Ok(receipt) => {
                    let after = counts(&path);
                    prop_assert!(!stale, "a stale version was accepted");
                    prop_assert_eq!(after.0, before.0 + 1);
                    prop_assert_eq!(after.1, before.1 + 1);
                    prop_assert_eq!(receipt.new_version, current + 1);
                    let expect_requests = before.2 + i64::from(draft.kind == DecisionKind::RetrySameKey);
                    prop_assert_eq!(after.2, expect_requests);
                }
                Err(e) => {
                    prop_assert!(matches!(e.exit_code(), 3 | 4), "unexpected error: {e}");
                    if stale {
                        prop_assert_eq!(e.exit_code(), 4);
                    }
                    prop_assert_eq!(counts(&path), before, "a refusal wrote something");
                }
            }
        }
        // Whatever was recorded, reopened or cancelled, the chain holds.
        let decisions = counts(&path).0;
        prop_assert_eq!(
            ledger.verify_chain().unwrap(),
            settle::store::ChainVerdict::Intact {
                decisions: u64::try_from(decisions).unwrap(),
                head: rusqlite::Connection::open(&path)
                    .unwrap()
                    .query_row("SELECT id, chain_hash FROM decisions ORDER BY id DESC LIMIT 1", [], |r| {
                        Ok((DecisionId(r.get(0)?), r.get(1)?))
                    })
                    .ok(),
            }
        );
    }
}

/// The console's path for a held lock: every draft comes back `Busy`, in
/// the ledger's words rather than SQLite's, and nothing is written.
#[test]
fn a_held_write_lock_is_a_busy_outcome_for_every_draft() {
    use settle::app::{DecisionOutcome, Msg};
    use settle::store::{Access, Ledger};

    let dir = tempfile::tempdir().unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 23, 0, 0).unwrap();
    let path = settle::demo::build(dir.path(), now).unwrap().ledger_path;
    let (mut ledger, _) = Ledger::open_waiting(
        &path,
        Access::ReadWrite,
        std::time::Duration::ZERO,
        &mut |_| {},
    )
    .unwrap();
    let draft = |op: i64| DecisionDraft {
        op_id: OperationId(op),
        kind: DecisionKind::Applied,
        result_id: Some("r".to_string()),
        evidence: None,
        note: None,
        override_committed: false,
        operator: "console".to_string(),
        expected_version: ledger.detail(OperationId(op)).unwrap().operation.version,
        undoes: None,
    };
    let drafts = vec![draft(2), draft(3)];
    let before = counts(&path);
    let service = rusqlite::Connection::open(&path).unwrap();
    service.execute_batch("BEGIN IMMEDIATE").unwrap();
    let answers = [settle::console::effects::record(&mut ledger, now, &drafts)];
    service.execute_batch("ROLLBACK").unwrap();
    let [Msg::DecisionsRecorded(results)] = answers.as_slice() else {
        panic!("{answers:?}");
    };
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(
            r.outcome,
            DecisionOutcome::Busy {
                waited: std::time::Duration::ZERO
            }
        );
    }
    assert_eq!(counts(&path), before);
}
