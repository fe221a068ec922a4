//! A ledger file deleted or replaced under the running console: the header
//! stops saying "live", the status says why, and no decision is taken; the
//! file back in place, it is live again. And a service ledger opened for the
//! first time is adopted behind a read-only look.

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn a_deleted_ledger_stops_looking_live_and_takes_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 32));
    screen.wait_for("● live", WAIT);
    screen.wait_for("Queue 11 operations", WAIT);
    // G acts on the rows, which arrive apart from the title's count.
    screen.wait_for("rpt-2026-W48-acme", WAIT);
    let decisions = query_i64(&ledger, "SELECT COUNT(*) FROM decisions");
    // The form is open when the file goes away (a rename keeps the inode:
    // the console must not follow it).
    screen.send("G");
    screen.send("a");
    screen.wait_for("result id report-8812", WAIT);
    let aside = dir.path().join("aside.db");
    std::fs::rename(&ledger, &aside).unwrap();
    screen.wait_for("✕ file deleted or replaced", WAIT);
    screen.send("\r");
    screen.wait_for("the ledger file was deleted: nothing recorded", WAIT);
    screen.send("\x1b");
    screen.send("a");
    screen.wait_for("decisions are refused", WAIT);
    assert_eq!(
        query_i64(&aside, "SELECT COUNT(*) FROM decisions"),
        decisions,
        "nothing written to the orphaned file"
    );

    std::fs::rename(&aside, &ledger).unwrap();
    screen.wait_for("● live", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}

/// A service's ledger opened in the console for the first time: the
/// console opens at once, read-only, while the writer adopts it; then
/// decisions open and the one recorded shows in the Audit view (the
/// reader, opened before the adoption, sees the console tables).
#[test]
fn a_service_ledger_is_adopted_behind_a_read_only_look() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("service.db");
    let conn = sql(&ledger);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO operations VALUES (1, 'acme', 'create_report', 'k-1', 'sha256:ab', NULL,
            'unknown', NULL, 3, NULL, NULL, NULL, '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 1);
         INSERT INTO events (op_id, attempt, at, event, detail) VALUES
            (1, 1, '2026-11-06T10:15:01Z', 'committed', '{\"effect_id\":\"report-1\"}');",
    )
    .unwrap();
    drop(conn);
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 32));
    screen.wait_for("k-1", WAIT);
    screen.wait_for("adopted", WAIT);
    let adopted = screen.wait_gone("ADOPTING", WAIT);
    assert!(!adopted.contains("READ-ONLY"), "{adopted}");
    screen.send("a");
    screen.wait_for("result id report-1", WAIT);
    screen.send("\r");
    screen.wait_for("recorded #1 applied", WAIT);
    screen.send("4");
    let audit = screen.wait_for("decided at", WAIT);
    assert!(!audit.contains("no decisions recorded yet"), "{audit}");
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT COUNT(*) FROM decisions WHERE operator = 'e2e-operator'"
        ),
        1
    );
}

/// A console that quits closes its connections, the writer's last: the
/// last connection to a SQLite file checkpoints its WAL and removes it, so
/// the next process has no log to read back. Left behind, the first
/// `settle decide` after a console on 1M operations read both logs whole
/// (12-20 ms against 4 ms).
#[test]
fn a_console_that_quits_leaves_no_wal_behind() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 32));
    screen.wait_for("● live", WAIT);
    screen.wait_for("rpt-2026-W48-acme", WAIT);
    // A service commits a new operation; the console catches its read
    // model up, writing the model's WAL.
    sql(&ledger)
        .execute_batch(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES ('acme', 'create_report', 'k-written-meanwhile', 'sha256:00', 'unknown',
                 3, '2026-11-06T10:00:00Z', '2026-11-06T10:00:00Z', 1);",
        )
        .unwrap();
    screen.wait_for("k-written-meanwhile", WAIT);
    let wal = |extension: &str| ledger.with_extension(extension);
    assert!(
        wal("db-settle-wal").exists(),
        "the read model is in WAL mode"
    );
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    for extension in ["db-wal", "db-settle-wal"] {
        assert!(!wal(extension).exists(), "{extension} left behind");
    }
}
