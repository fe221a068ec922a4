//! Deciding an incident at once, as an operator would at 3 a.m.: the real
//! binary in a pseudo-terminal on a ledger a service wrote, filter to one
//! receiver, `*` to select every matching row, `n` with evidence, type the
//! count, Enter. SQL afterwards confirms exactly the matching rows changed,
//! each with its own decision row, and that a row another process changed
//! while the form was open was skipped and reported, never overwritten.

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(15);
/// Operations of the receiver that went down, all `unknown`.
const INCIDENT: i64 = 40;

#[test]
fn select_all_matching_records_not_applied_on_exactly_those_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    // The service's incident: 40 operations of one receiver timed out, as
    // it writes them with plain SQL.
    let conn = sql(&ledger);
    for i in 0..INCIDENT {
        conn.execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES (?1, 'ship_parcel', ?2, 'sha256:00', 'unknown', 3,
                 strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-10 minutes'),
                 strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-9 minutes'), 1)",
            rusqlite::params![format!("acct-{:02}", i % 7), format!("parcel-{i:03}")],
        )
        .unwrap();
    }
    let others_before = query_text(
        &ledger,
        "SELECT group_concat(id || ':' || state || ':' || version, ' ') FROM
            (SELECT id, state, version FROM operations WHERE op_type <> 'ship_parcel' ORDER BY id)",
    );

    let config = dir.path().to_str().unwrap();
    let mut screen = Screen::start(
        &[ledger.to_str().unwrap(), "--operator", "night-shift"],
        120,
        40,
        &[("XDG_CONFIG_HOME", config)],
    );
    screen.wait_for("parcel-039", WAIT);
    screen.send("/");
    for c in "type:ship_parcel".chars() {
        screen.send(&c.to_string());
    }
    screen.send("\r");
    screen.wait_for("Queue 40 operations", WAIT);
    screen.send("*");
    screen.wait_for("selected all 40 rows", WAIT);
    screen.send("n");
    screen.wait_for("all matching (40)", WAIT);
    for c in "carrier API has no parcel for these keys".chars() {
        screen.send(&c.to_string());
    }
    // Enter judges every row again with the evidence typed.
    screen.send("\r");
    screen.wait_for("pass 40 of 40 would be written", WAIT);

    // Meanwhile the service moves one of them forward: it must be skipped.
    let changed: i64 = query_i64(
        &ledger,
        "SELECT id FROM operations WHERE idem_key = 'parcel-007'",
    );
    sql(&ledger)
        .execute(
            "UPDATE operations SET state = 'completed', result_id = 'parcel-sent-7',
                 version = version + 1 WHERE id = ?1",
            [changed],
        )
        .unwrap();

    // The count must be typed before Enter writes anything.
    screen.send("\t\t");
    screen.send("\r");
    screen.wait_for("type 40 in the confirm field", WAIT);
    assert_eq!(
        query_i64(&ledger, "SELECT COUNT(*) FROM decisions"),
        1,
        "nothing but the demo's own decision before the count is typed"
    );
    for c in "40".chars() {
        screen.send(&c.to_string());
    }
    screen.send("\r");
    let done = screen.wait_for("wrote 39 of 40", WAIT);
    assert!(done.contains("1 conflicted"), "{done}");
    assert!(done.contains(&format!("#{changed}")), "{done}");
    screen.send("q");
    assert!(screen.wait_exit(WAIT));

    // Exactly the matching rows changed, each with its own decision row.
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT COUNT(*) FROM operations WHERE op_type = 'ship_parcel' AND state = 'not_applied'"
        ),
        INCIDENT - 1
    );
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT COUNT(DISTINCT d.op_id) FROM decisions d JOIN operations o ON o.id = d.op_id
             WHERE o.op_type = 'ship_parcel' AND d.decision = 'not_applied'
               AND d.operator = 'night-shift'
               AND d.evidence = 'carrier API has no parcel for these keys'"
        ),
        INCIDENT - 1
    );
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT COUNT(*) FROM decisions d JOIN operations o ON o.id = d.op_id
             WHERE o.op_type = 'ship_parcel'"
        ),
        INCIDENT - 1,
        "one decision row per written operation"
    );
    // The row the service changed keeps what the service wrote.
    assert_eq!(state(&ledger, changed), "completed");
    assert_eq!(
        query_i64(
            &ledger,
            &format!("SELECT COUNT(*) FROM decisions WHERE op_id = {changed}")
        ),
        0
    );
    // Every other operation is as it was.
    let others_after = query_text(
        &ledger,
        "SELECT group_concat(id || ':' || state || ':' || version, ' ') FROM
            (SELECT id, state, version FROM operations WHERE op_type <> 'ship_parcel' ORDER BY id)",
    );
    assert_eq!(others_before, others_after);
    let verify = settle(&["audit", ledger.to_str().unwrap(), "--verify"]);
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
}
