//! Opening a service's ledger: read-only never adopts, and a writable
//! open brings an earlier adoption's triggers up to date.

use crate::store::backend::Reads as _;
use rusqlite::Connection;
use tempfile::TempDir;

use super::{Ledger, SERVICE_TABLES, fill, now};
use crate::domain::{Seek, State};
use crate::query::Query;
use crate::store::{Access, Progress, create_service_ledger};

#[test]
fn a_read_only_open_never_adopts_yet_reads_the_same_rows() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("service.db");
    create_service_ledger(&path, SERVICE_TABLES).unwrap();
    fill(&Connection::open(&path).unwrap(), 1, 20);
    let (ledger, report) = Ledger::open(&path, Access::ReadOnly).unwrap();
    assert!(report.not_adopted.is_some());
    assert!(
        ledger.filters_scan(),
        "no index for filters before adoption"
    );
    let version: i64 = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 0);
    let unadopted = ledger
        .page(&Query::queue(), Seek::First, 50, now())
        .unwrap();
    let counts = ledger.state_counts(now()).unwrap();
    drop(ledger);

    let mut steps: Vec<Progress> = Vec::new();
    let (ledger, _) =
        Ledger::open_with_progress(&path, Access::ReadWrite, &mut |p| steps.push(p)).unwrap();
    assert!(
        !ledger.filters_scan(),
        "adoption built the filters' indexes"
    );
    assert_eq!(
        ledger
            .page(&Query::queue(), Seek::First, 50, now())
            .unwrap(),
        unadopted
    );
    assert_eq!(ledger.state_counts(now()).unwrap(), counts);
    let last = steps.last().unwrap();
    assert_eq!(last.done, last.total);
    assert!(steps.windows(2).all(|w| w[0].done < w[1].done));
    assert!(
        steps
            .iter()
            .any(|p| p.step.contains("settle_operations_queue"))
    );
}

/// A service whose table allows a NULL state writes one: the read model
/// counts it (as a malformed state). A ledger an older settle adopted
/// (triggers and indexes of settle's on the service's tables, one trigger
/// failing that NULL as schema 3's did) loses them all on its next writable
/// open, and keeps every row.
#[test]
fn a_ledger_adopted_earlier_loses_the_triggers_and_indexes_on_the_service_tables() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("lax.db");
    let service = Connection::open(&path).unwrap();
    service
        .execute_batch(&SERVICE_TABLES.replace("state            TEXT NOT NULL", "state TEXT"))
        .unwrap();
    fill(&service, 1, 5);
    service
        .execute("UPDATE operations SET state = NULL WHERE id = 1", [])
        .unwrap();
    let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    let counts = ledger.state_counts(now()).unwrap();
    assert_eq!(counts.total, 5);
    assert_eq!(counts.get(&State::Unrecognized(String::new())), 1);
    drop(ledger);

    // The same ledger as schema 5 left it, with schema 3's count trigger.
    service
        .execute_batch(
            "CREATE TABLE settle_state_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL)
                 WITHOUT ROWID;
             CREATE TABLE settle_op_summary (op_id INTEGER PRIMARY KEY, attempts INTEGER);
             CREATE TRIGGER settle_operations_insert AFTER INSERT ON operations BEGIN
                 INSERT INTO settle_state_counts (state, n) VALUES (NEW.state, 1)
                 ON CONFLICT (state) DO UPDATE SET n = n + 1;
             END;
             CREATE TRIGGER settle_events_insert AFTER INSERT ON events BEGIN
                 INSERT INTO settle_op_summary (op_id) VALUES (NEW.op_id);
             END;
             CREATE INDEX settle_operations_state ON operations (state, id);
             CREATE INDEX settle_events_op ON events (op_id, id);
             PRAGMA user_version = 5;",
        )
        .unwrap();
    let insert_null = |id: i64| {
        service.execute(
            "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES (?1, 'a', 'charge', 'k-' || ?1, 'fp', NULL, 3, '2026-01-01T00:00:00Z',
                 '2026-01-01T00:00:00Z', 1)",
            [id],
        )
    };
    assert!(insert_null(6).is_err(), "the old trigger fails the write");
    let rows = |table: &str| -> i64 {
        service
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    let before = ["operations", "attempts", "events"].map(rows);

    let (ledger, report) = Ledger::open(&path, Access::ReadWrite).unwrap();
    let said = report.upgraded.unwrap_or_default();
    assert!(
        said.contains(&format!("(schema 5 -> {})", super::schema::SCHEMA_VERSION)),
        "{said}"
    );
    assert_eq!(["operations", "attempts", "events"].map(rows), before);
    let on_service_tables: Vec<String> = service
        .prepare(
            "SELECT name FROM sqlite_master WHERE name LIKE 'settle%'
                 AND (tbl_name IN ('operations', 'attempts', 'events')
                      OR name IN ('settle_op_summary', 'settle_state_counts'))",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(on_service_tables, Vec::<String>::new());
    insert_null(6).unwrap();
    service
        .execute("UPDATE operations SET state = 'unknown' WHERE id = 1", [])
        .unwrap();
    ledger.model.borrow().as_ref().unwrap().sweep_all().unwrap();
    let counts = ledger.state_counts(now()).unwrap();
    assert_eq!(counts.total, 6);
    assert_eq!(counts.get(&State::Unrecognized(String::new())), 1);
    assert_eq!(
        ledger
            .page(&Query::default(), Seek::First, 10, now())
            .unwrap()
            .len(),
        6
    );
}
