//! PostgreSQL-only read behaviour: a read cancelled from another thread
//! stops and says so, the statement timeout is reported (never taken for a
//! cancel), and cells a service wrote outside the contract are flagged on
//! their row instead of failing the page.

use crate::store::backend::{History as _, Reads as _};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use chrono::{TimeZone, Utc};

use super::testing::fresh_database;
use crate::domain::{Seek, State};
use crate::error::Error;
use crate::query::Query;
use crate::store::backend::Session as _;
use crate::store::postgres::conn::Pg;
use crate::store::postgres::schema::{CONSOLE_TABLES, SERVICE_TABLES};

/// A ledger of three operations, and a second connection (the service).
pub(crate) fn ledger(name: &str) -> Option<(Pg, postgres::Client)> {
    let address = fresh_database(name)?;
    let mut service = postgres::Client::connect(address.to_str()?, postgres::NoTls).unwrap();
    service
        .batch_execute(&format!(
            "{SERVICE_TABLES}{CONSOLE_TABLES}
             INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
             SELECT 'acme', 'charge', 'k-' || n, 'fp', 'unknown', 3,
                 '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'
             FROM generate_series(1, 3) n;"
        ))
        .unwrap();
    Some((Pg::connect_for_test(&address, true), service))
}

/// Blocks every read of `operations` until the returned transaction ends.
pub(crate) fn hold_lock(service: &mut postgres::Client) -> postgres::Transaction<'_> {
    let mut tx = service.transaction().unwrap();
    tx.batch_execute("LOCK TABLE operations IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    tx
}

#[test]
fn a_read_cancelled_from_another_thread_stops_and_the_next_one_runs() {
    let Some((pg, mut service)) = ledger("cancel") else {
        return;
    };
    let handle = pg.interrupt_handle();
    let lock = hold_lock(&mut service);
    let (done, finished) = mpsc::channel();
    let reader = thread::spawn(move || {
        let result = pg.count(&Query::parse("attempts>2").unwrap(), Utc::now());
        done.send(()).unwrap();
        (pg, result)
    });
    // The cancel reaches only a statement already running: repeat it until
    // the read gives up (the lock keeps it waiting until then).
    while finished.recv_timeout(Duration::from_millis(50)).is_err() {
        handle.interrupt();
    }
    let (pg, result) = reader.join().unwrap();
    assert!(
        matches!(result, Err(Error::Interrupted { .. })),
        "{result:?}"
    );
    lock.rollback().unwrap();
    assert_eq!(pg.count(&Query::default(), Utc::now()).unwrap(), 3);
}

#[test]
fn a_statement_timeout_is_reported_not_taken_for_a_cancel() {
    let Some((pg, mut service)) = ledger("timeout") else {
        return;
    };
    pg.time_out_after(Duration::from_millis(100));
    let lock = hold_lock(&mut service);
    let err = pg
        .page(&Query::default(), Seek::First, 10, Utc::now())
        .unwrap_err();
    lock.rollback().unwrap();
    let text = err.to_string();
    assert!(
        matches!(err, Error::Database { .. }) && text.contains("statement timeout"),
        "{text}"
    );
}

#[test]
fn cells_outside_the_contract_are_flagged_on_their_row() {
    let Some((pg, mut service)) = ledger("malformed") else {
        return;
    };
    // A service's looser table: no NOT NULL, a version and a time as text.
    service
        .batch_execute(
            "ALTER TABLE operations ALTER COLUMN account DROP NOT NULL,
                 ALTER COLUMN state DROP NOT NULL,
                 ALTER COLUMN version TYPE text,
                 ALTER COLUMN created_at TYPE text
                     USING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"');
             UPDATE operations SET account = NULL, version = 'three', created_at = 'yesterday'
                 WHERE idem_key = 'k-2';
             UPDATE operations SET state = NULL WHERE idem_key = 'k-3';",
        )
        .unwrap();
    let now = Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap();
    let rows = pg.page(&Query::default(), Seek::First, 10, now).unwrap();
    assert_eq!(rows.len(), 3, "every row still listed");
    let flags = |key: &str| {
        let row = rows.iter().find(|r| r.idem_key == key).unwrap();
        crate::domain::Malformed::describe(&row.malformed)
    };
    assert_eq!(flags("k-1"), "", "digits in a text column are a number");
    let bad = flags("k-2");
    assert!(bad.contains("account: NULL"), "{bad}");
    assert!(bad.contains("version: text \"three\""), "{bad}");
    assert!(
        bad.contains("created_at: not a time: \"yesterday\""),
        "{bad}"
    );
    assert_eq!(flags("k-3"), "state: NULL");
    let detail = pg.detail(rows[1].id).unwrap();
    assert_eq!(detail.operation.version, 0);
    assert_eq!(detail.operation.created_at, "yesterday");
    let counts = pg.state_counts(now).unwrap();
    assert_eq!(counts.get(&State::Unrecognized(String::new())), 1);
    assert!(!counts.estimated, "a small ledger is counted exactly");
}

#[test]
fn a_large_ledger_estimates_the_states_outside_the_queue_and_counts_the_queue() {
    let Some((pg, mut service)) = ledger("estimate") else {
        return;
    };
    service
        .batch_execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, lease_expires_at, created_at, updated_at)
             SELECT 'acme', 'charge', 'c-' || n,
                 'fp', CASE WHEN n <= 10 THEN 'completed' WHEN n <= 15 THEN 'not_applied'
                            ELSE 'reserved' END,
                 3, CASE WHEN n = 16 THEN '2026-01-01T00:00:00Z'::timestamptz END,
                 '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'
             FROM generate_series(1, 17) n;
             ANALYZE operations;",
        )
        .unwrap();
    let now = Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap();
    let exact = pg.state_counts(now).unwrap();
    assert!(!exact.estimated);
    // As if the ledger were above the threshold: the statistics of this
    // small table are complete, so the estimate comes out right.
    let estimated = pg.state_counts_up_to(now, 0).unwrap();
    assert!(estimated.estimated);
    assert_eq!(estimated.by_state, exact.by_state);
    assert_eq!(estimated.total, 20);
    assert_eq!(
        estimated.stale_reserved, 2,
        "a passed lease is stale, a missing one too"
    );
    assert!(estimated.is_estimate(&State::Completed) && !estimated.is_estimate(&State::Unknown));
}
