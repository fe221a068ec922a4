//! A batch of decisions written against rows a service keeps changing.

use super::{adopted, now};
use crate::domain::OperationId;
use crate::error::Error;
use crate::store::backend::Decisions as _;
use crate::store::backend::History as _;

/// A batch as `settle decide --filter` writes it: rows
/// listed at version 1, one changed by the service before the batch runs and
/// one a rule refuses. Only the others are written, each with its own
/// chained decision row; the changed one is reported, never overwritten.
#[test]
fn a_batch_skips_a_row_changed_since_listing_and_one_a_rule_refuses() {
    use crate::domain::{DecisionDraft, DecisionKind};
    use crate::store::ChainVerdict;
    let (_dir, mut ledger, service) = adopted(10);
    let draft = |id: i64| DecisionDraft {
        op_id: OperationId(id),
        kind: DecisionKind::Applied,
        result_id: None,
        evidence: Some("provider shows the charge".to_string()),
        note: None,
        override_committed: false,
        operator: "tester".to_string(),
        expected_version: 1,
        undoes: None,
    };
    // 5 and 10 are unknown, 2 exhausted, 1 completed (fill's cycle).
    let drafts: Vec<DecisionDraft> = [5, 10, 2, 1].into_iter().map(draft).collect();
    for d in &drafts {
        if d.op_id.0 != 1 {
            ledger.judge_decision(d, now()).unwrap();
        }
    }
    service
        .execute(
            "UPDATE operations SET version = 2, updated_at = '2026-06-01T11:00:00Z' WHERE id = 10",
            [],
        )
        .unwrap();
    let outcomes = ledger.record_decisions(&drafts, now()).unwrap();
    assert!(outcomes[0].is_ok(), "{:?}", outcomes[0]);
    assert!(
        matches!(outcomes[1], Err(Error::VersionConflict { found: 2, .. })),
        "{:?}",
        outcomes[1]
    );
    assert!(outcomes[2].is_ok(), "{:?}", outcomes[2]);
    assert!(
        matches!(outcomes[3], Err(Error::Refused { .. })),
        "{:?}",
        outcomes[3]
    );
    let decided: Vec<(i64, i64)> = service
        .prepare("SELECT op_id, op_version FROM decisions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(decided, [(5, 1), (2, 1)]);
    let state = |id: i64| -> (String, i64) {
        service
            .query_row(
                "SELECT state, version FROM operations WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(state(5), ("completed".to_string(), 2));
    assert_eq!(state(2), ("completed".to_string(), 2));
    assert_eq!(state(10), ("unknown".to_string(), 2), "overwritten");
    assert_eq!(state(1), ("completed".to_string(), 1));
    assert!(matches!(
        ledger.verify_chain().unwrap(),
        ChainVerdict::Intact { decisions: 2, .. }
    ));
}
