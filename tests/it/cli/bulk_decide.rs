//! `settle decide LEDGER --filter Q ... --expect-count N` through the real
//! binary on a ledger a service wrote with plain SQL, checked with SQL
//! afterwards: a wrong or missing count writes nothing, the right one changes
//! exactly the matching queue rows, each with its own decision row, and
//! refused rows are reported grouped by rule.

use crate::kit::*;

use std::path::{Path, PathBuf};

/// 12 unknown `create_report` rows (1-12), 210 unknown `place_order` rows
/// (13-222), 3 unknown `create_report` rows whose events show a committed
/// effect (223-225; `not_applied` is refused there), and 5 completed
/// `create_report` rows (226-230; outside the queue). Adopted, so the
/// decisions table exists before the first decision.
fn incident(dir: &Path) -> PathBuf {
    let path = dir.join("incident.db");
    let conn = sql(&path);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    let op = |id: i64, op_type: &str, state: &str| {
        tx.execute(
            "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES (?1, 'acme', ?2, 'k-' || ?1, 'fp', ?3, 3, '2026-11-30T09:00:00Z',
                 '2026-11-30T09:00:00Z', 1)",
            rusqlite::params![id, op_type, state],
        )
        .unwrap();
    };
    for id in 1..=12 {
        op(id, "create_report", "unknown");
    }
    for id in 13..=222 {
        op(id, "place_order", "unknown");
    }
    for id in 223..=225 {
        op(id, "create_report", "unknown");
        tx.execute(
            "INSERT INTO events (op_id, attempt, at, event, detail)
             VALUES (?1, 1, '2026-11-30T09:00:01Z', 'committed', '{\"effect_id\": \"rep-' || ?1 || '\"}')",
            [id],
        )
        .unwrap();
    }
    for id in 226..=230 {
        op(id, "create_report", "completed");
    }
    tx.commit().unwrap();
    drop(conn);
    let out = settle(&["adopt", path.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    path
}

fn bulk(ledger: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["decide", ledger.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--operator", "tester"]);
    settle(&all)
}

const NOT_APPLIED: [&str; 5] = [
    "--filter",
    "type:create_report",
    "--not-applied",
    "--evidence",
    "INC-7: provider lost the batch",
];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = NOT_APPLIED.to_vec();
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_missing_or_wrong_count_writes_nothing_and_says_the_real_one() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let before = dump(&l);

    let out = bulk(&l, &NOT_APPLIED);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("15 rows"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expect-count 15"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, dump(&l), "no --expect-count wrote something");

    let out = bulk(&l, &with(&["--expect-count", "2000"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expect-count 2000, but 15 rows"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, dump(&l), "a wrong --expect-count wrote something");
}

#[test]
fn only_queue_rows_count_so_completed_ones_are_never_reached() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let before = dump(&l);
    let out = bulk(
        &l,
        &[
            "--filter",
            "state:completed",
            "--not-applied",
            "--evidence",
            "x",
            "--expect-count",
            "5",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("but 0 rows"), "{}", stderr(&out));
    assert_eq!(before, dump(&l));
}

#[test]
fn a_dry_run_judges_every_row_groups_the_refusals_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let before = dump(&l);
    let out = bulk(&l, &with(&["--dry-run"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("15 rows of the triage queue match"), "{err}");
    assert!(err.contains("12 pass every rule for not_applied"), "{err}");
    assert!(err.contains("3 would be refused"), "{err}");
    assert!(
        err.contains("3 x committed effect seen: 225, 224, 223"),
        "{err}"
    );
    assert!(
        err.contains("1 x events show committed effect rep-224"),
        "{err}"
    );
    assert!(err.contains("sample:"), "{err}");
    assert!(stdout(&out).contains("nothing written"), "{}", stdout(&out));
    assert_eq!(before, dump(&l), "a dry run wrote something");

    let out = bulk(&l, &with(&["--dry-run", "--expect-count", "14"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expect-count 14 would be refused: 15 rows match"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, dump(&l), "a dry run wrote something");
}

#[test]
fn the_right_count_writes_exactly_the_matching_rows_each_with_its_own_decision() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let untouched = |l: &Path| {
        query_text(
            l,
            "SELECT group_concat(id || state || version, ',') FROM operations
             WHERE op_type <> 'create_report' OR state = 'completed' OR id >= 223",
        )
    };
    let before = untouched(&l);
    let out = bulk(&l, &with(&["--expect-count", "15"]));
    // Three rows were refused: the written ones stay written, exit 3 says
    // a person must look at the rest.
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let summary = stdout(&out);
    assert!(
        summary.contains("written 12, refused 3, conflicted 0"),
        "{summary}"
    );
    assert!(
        summary.contains("3 x committed effect seen: 225, 224, 223"),
        "{summary}"
    );
    assert!(stderr(&out).contains("batch 1 of 1"), "{}", stderr(&out));

    let decided = query_text(
        &l,
        "SELECT group_concat(op_id, ',') FROM (SELECT op_id FROM decisions ORDER BY op_id)",
    );
    let expected: Vec<String> = (1..=12).map(|i| i.to_string()).collect();
    assert_eq!(decided, expected.join(","));
    assert_eq!(
        query_i64(
            &l,
            "SELECT COUNT(*) FROM operations o JOIN decisions d ON d.op_id = o.id
             WHERE o.id <= 12 AND o.state = 'not_applied' AND o.version = 2
               AND d.decision = 'not_applied' AND d.operator = 'tester'
               AND d.evidence = 'INC-7: provider lost the batch' AND d.op_version = 1"
        ),
        12
    );
    assert_eq!(untouched(&l), before, "a row outside the match changed");
    let verify = settle(&["audit", l.to_str().unwrap(), "--verify"]);
    assert_eq!(code(&verify), 0, "{}", stdout(&verify));
    assert!(stdout(&verify).contains("chain intact: 12 decisions"));
}

#[test]
fn more_rows_than_a_batch_are_written_in_batches_with_a_progress_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let out = bulk(
        &l,
        &[
            "--filter",
            "type:place_order",
            "--applied",
            "--evidence",
            "provider export",
            "--expect-count",
            "210",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("batch 1 of 2: 200 of 210"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("batch 2 of 2: 210 of 210"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("written 210, refused 0, conflicted 0"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        query_i64(
            &l,
            "SELECT COUNT(DISTINCT op_id) FROM decisions d JOIN operations o ON o.id = d.op_id
             WHERE o.op_type = 'place_order' AND o.state = 'completed'"
        ),
        210
    );
    assert_eq!(query_i64(&l, "SELECT COUNT(*) FROM decisions"), 210);
}

#[test]
fn a_single_operation_and_a_filter_are_one_or_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let l = incident(dir.path());
    let out = bulk(&l, &["5", "--filter", "type:x", "--cancel-retry"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = bulk(&l, &["--cancel-retry", "--expect-count", "3"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
