//! The store's own tests: paging from any position, filters, counts and
//! summaries kept current by triggers when a service writes plain SQL, and
//! the query plans the console's speed depends on (a later change must not
//! bring a full scan or a sort of the whole queue back). The fixtures are
//! here; each concern's tests are in a file of their own.

use crate::store::backend::Reads as _;
use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, params};
use tempfile::TempDir;

use super::Sqlite as Ledger;
use super::schema::SERVICE_TABLES;
// The tests name these modules' items by path, as the backend's own files do.
use super::{reads, schema};
use crate::domain::{Sort, SortColumn};
use crate::query::Query;
use crate::store::{Access, create_service_ledger};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

/// A service's plain-SQL insert of one operation.
fn insert_op(
    conn: &Connection,
    id: i64,
    account: &str,
    key: &str,
    state: &str,
    lease: Option<&str>,
) {
    conn.execute(
        "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
             max_attempts, lease_expires_at, created_at, updated_at, version)
         VALUES (?1, ?2, 'charge', ?3, 'fp', ?4, 3, ?5, '2026-01-01T00:00:00Z',
             '2026-01-01T00:00:00Z', 1)",
        params![id, account, key, state, lease],
    )
    .unwrap();
}

fn insert_attempt(conn: &Connection, op: i64, attempt: i64, error: Option<&str>) {
    conn.execute(
        "INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
         VALUES (?1, ?2, '2026-01-01T00:00:00Z', 'error', ?3)",
        params![op, attempt, error],
    )
    .unwrap();
}

/// A service ledger of `n` operations cycling through the states, adopted
/// by opening it read-write; also returns a second connection to write as
/// the service does.
fn adopted(n: i64) -> (TempDir, Ledger, Connection) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("service.db");
    create_service_ledger(&path, SERVICE_TABLES).unwrap();
    let service = Connection::open(&path).unwrap();
    fill(&service, 1, n);
    let (ledger, report) = Ledger::open(&path, Access::ReadWrite).unwrap();
    assert!(report.upgraded.is_some());
    (dir, ledger, service)
}

const STATES: [&str; 5] = ["unknown", "completed", "exhausted", "reserved", "conflict"];

fn fill(conn: &Connection, from: i64, to: i64) {
    for id in from..=to {
        let state = STATES[(id % 5) as usize];
        // Even reserved ids hold a lease that has passed, odd ones a live one.
        let lease = (state == "reserved").then_some(if id % 2 == 0 {
            "2026-06-01T13:00:00+02:00"
        } else {
            "2026-06-01T12:30:00Z"
        });
        insert_op(
            conn,
            id,
            &format!("acct-{}", id % 7),
            &format!("k-{id:04}"),
            state,
            lease,
        );
        insert_attempt(conn, id, 1, Some("timeout after 30s"));
        if id % 3 == 0 {
            insert_attempt(conn, id, 2, Some("connection reset"));
        }
    }
}

fn ids(rows: &[crate::domain::OperationRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id.0).collect()
}

/// What the queue holds by the domain's own definition, newest first.
fn queue_ids(ledger: &Ledger) -> Vec<i64> {
    let mut all = Vec::new();
    ledger
        .for_each_row(&Query::default(), now(), &mut |row| {
            if crate::domain::State::QUEUE.contains(&row.state) || row.is_stale_reservation(now()) {
                all.push(row.id.0);
            }
            Ok(())
        })
        .unwrap();
    all
}

fn by(column: SortColumn, descending: bool) -> Sort {
    Sort { column, descending }
}

mod aside;
mod clusters;
mod copy;
mod counts;
mod decide;
mod malformed;
mod model;
mod open;
mod paging;
mod plans;
mod text_index;
