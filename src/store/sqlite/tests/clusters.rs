//! The queue grouped by receiver, account, error and age.

use crate::store::backend::Reads as _;
use rusqlite::{Connection, params};
use tempfile::TempDir;

use super::{Ledger, SERVICE_TABLES, insert_attempt, now};
use crate::query::Query;
use crate::store::{Access, create_service_ledger};

/// The queue grouped on a small plain-SQL ledger: an incident (one
/// receiver, one error) is one big group, operations outside the queue are
/// not counted, and each dimension keeps its biggest groups first.
#[test]
fn clusters_group_the_queue_by_receiver_account_error_and_age() {
    use crate::domain::{ClusterDimension, Clusters};

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("service.db");
    create_service_ledger(&path, SERVICE_TABLES).unwrap();
    let service = Connection::open(&path).unwrap();
    let op = |id: i64, account: &str, op_type: &str, state: &str, updated: &str| {
        service
            .execute(
                "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                     max_attempts, created_at, updated_at, version)
                 VALUES (?1, ?2, ?3, ?4, 'fp', ?5, 3, ?6, ?6, 1)",
                params![id, account, op_type, format!("k-{id}"), state, updated],
            )
            .unwrap();
    };
    let attempt = |id: i64, n: i64, error: &str, at: &str| {
        service
            .execute(
                "INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
                 VALUES (?1, ?2, ?3, 'error', ?4)",
                params![id, n, at, error],
            )
            .unwrap();
    };
    // The incident: five place_order of acct-1 timing out, 10 minutes ago.
    for id in 1..=5 {
        op(
            id,
            "acct-1",
            "place_order",
            "unknown",
            "2026-06-01T11:50:00Z",
        );
        attempt(id, 1, "connection refused", "2026-06-01T11:49:00Z");
        attempt(id, 2, "timeout", "2026-06-01T11:50:00Z");
    }
    // Two older ones elsewhere, one without an error; one settled. The
    // exhausted one was touched a minute ago, but it got stuck when its
    // last attempt ran, a day before: its age is the attempt's.
    op(6, "acct-2", "refund", "exhausted", "2026-06-01T11:59:00Z");
    attempt(6, 1, "declined", "2026-05-31T12:00:00Z");
    op(7, "acct-3", "refund", "conflict", "2026-04-01T00:00:00Z");
    op(
        8,
        "acct-1",
        "place_order",
        "completed",
        "2026-06-01T11:59:00Z",
    );
    insert_attempt(&service, 8, 1, Some("timeout"));

    let groups = |clusters: &Clusters, dimension| -> Vec<(Option<String>, i64)> {
        let section = clusters
            .sections
            .iter()
            .find(|s| s.dimension == dimension)
            .unwrap();
        section
            .top
            .iter()
            .map(|c| (c.value.clone(), c.count))
            .collect()
    };
    let some = |s: &str| Some(s.to_string());
    // The same answer before adoption (subqueries) and after (summaries).
    for access in [Access::ReadOnly, Access::ReadWrite] {
        let (ledger, _) = Ledger::open(&path, access).unwrap();
        let clusters = ledger.clusters(&Query::queue(), now(), 10).unwrap();
        assert_eq!(clusters.total, 7, "{access:?}");
        assert_eq!(
            groups(&clusters, ClusterDimension::OpType),
            vec![(some("place_order"), 5), (some("refund"), 2)]
        );
        assert_eq!(
            groups(&clusters, ClusterDimension::Account),
            vec![
                (some("acct-1"), 5),
                (some("acct-2"), 1),
                (some("acct-3"), 1)
            ]
        );
        assert_eq!(
            groups(&clusters, ClusterDimension::LastError),
            vec![(some("timeout"), 5), (None, 1), (some("declined"), 1)],
            "the last attempt's error, not the first's"
        );
        assert_eq!(
            groups(&clusters, ClusterDimension::Age),
            vec![
                (some("under 1h"), 5),
                (some("1d to 7d"), 1),
                (some("older than 7d"), 1)
            ]
        );
        // The chart counts every operation once, the oldest in its first
        // bars and the newest in its last; each group's sparkline adds up
        // to the group.
        let timeline = &clusters.timeline;
        assert_eq!(timeline.counts.iter().sum::<u64>(), 7, "{timeline:?}");
        assert!(
            timeline.counts.last().is_some_and(|&n| n > 0),
            "{timeline:?}"
        );
        for group in clusters.groups() {
            let sum: u64 = group.timeline.iter().sum();
            assert_eq!(sum, group.count as u64, "{group:?}");
        }
        // Only the biggest group of each dimension kept: the rest counted.
        let top1 = ledger.clusters(&Query::queue(), now(), 1).unwrap();
        let accounts = &top1.sections[1];
        assert_eq!(accounts.top.len(), 1);
        assert_eq!((accounts.more_groups, accounts.more_count), (2, 2));
    }
}
