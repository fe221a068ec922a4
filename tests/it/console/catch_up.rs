//! A ledger nobody watched while a service wrote 200,000 operations, in
//! the real binary: the console draws at once from what its read model
//! holds, the header says "catching up n/N" while the model reads the
//! backlog, the words go once it is current, and the newest operation is
//! then on screen without a key.

use crate::kit::pty;

use crate::kit::*;
use pty::Screen;
use std::path::Path;
use std::time::Duration;

const BACKLOG: i64 = 200_000;

/// `n` operations from id `from`, each with one failed attempt, as a
/// service writes them.
fn write_ops(path: &Path, from: i64, n: i64) {
    let to = from + n - 1;
    sql(path)
        .execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to})
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             SELECT i, printf('acct-%03d', i % 500), 'charge', printf('k-%06d', i),
                 'sha256:00', 'unknown', 3, '2026-11-06T10:00:00Z', '2026-11-06T10:00:00Z', 1
             FROM n;
             INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
             SELECT id, 1, '2026-11-06T10:00:00Z', 'error', 'timeout'
             FROM operations WHERE id >= {from};"
        ))
        .unwrap();
}

#[test]
fn a_backlog_is_caught_up_behind_a_console_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    sql(&ledger).execute_batch(SERVICE_SCHEMA).unwrap();
    write_ops(&ledger, 1, 1_000);
    let adopted = settle(&["adopt", ledger.to_str().unwrap()]);
    assert!(adopted.status.success(), "{adopted:?}");
    // A week unwatched.
    write_ops(&ledger, 1_001, BACKLOG);

    let mut screen = Screen::console(&ledger, dir.path(), &[], (160, 30));
    // The header's words (an error would say "catching up the read model").
    let first = screen.wait_for("· catching up", Duration::from_secs(30));
    assert!(first.contains("Queue"), "{first}");
    let newest = format!("k-{:06}", 1_000 + BACKLOG);
    let done = screen.wait_gone("· catching up", Duration::from_secs(300));
    let shown = if done.contains(&newest) {
        done
    } else {
        screen.wait_for(&newest, Duration::from_secs(10))
    };
    // Nothing failed on the way, the other worker's catching up included.
    assert!(!shown.contains("catching up"), "{shown}");
    screen.send("q");
    assert!(screen.wait_exit(Duration::from_secs(10)));
}
