//! Adopting a large PostgreSQL ledger into a log: with stderr not a
//! terminal, progress is a line at most every 5 s or each tenth of the
//! work, and the last, however far the service's event ids run ahead of
//! its operations' (its sequence started at 100,000,000).

use crate::kit::pg;

use std::time::Instant;

use super::first_contact::SERVICE_DDL;
use crate::kit::jobqueue::queue;
use crate::kit::*;

/// The operations and events of a service with a long history.
const N: i64 = 300_000;

#[test]
fn adopting_300k_operations_into_a_log_prints_at_most_30_progress_lines() {
    let Some(db) = pg::fresh_database("adopt into a log") else {
        return;
    };
    let mut c = pg::connect(&db);
    c.batch_execute(SERVICE_DDL).unwrap();
    c.batch_execute(&format!(
        "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, params, state,
             max_attempts, created_at, updated_at)
         SELECT i, 'acct-' || (i % 50), 'charge', 'k-' || i, 'fp' || i, '{{}}',
             CASE WHEN i % 7 = 0 THEN 'unknown' ELSE 'completed' END, 3,
             '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00'
         FROM generate_series(1, {N}) i;
         INSERT INTO events (id, op_id, attempt, at, event)
         SELECT 100000000 + 2 * i + k, i, 1, '2026-01-01 00:00:00+00',
             CASE k WHEN 0 THEN 'started' ELSE 'timed_out' END
         FROM generate_series(1, {N}) i, generate_series(0, 1) k;"
    ))
    .unwrap();

    let started = Instant::now();
    let out = settle(&["adopt", db.to_str().unwrap()]);
    let took = started.elapsed();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let lines = err.lines().count();
    println!("adoption of {N} operations took {took:?}, {lines} lines on stderr:\n{err}");
    assert!(lines <= 30, "{lines} lines:\n{err}");
    assert_eq!(queue(&db).len() as i64, N / 7);
}
