//! The decision rules of ledger-v1, exercised through the real binary on a
//! real ledger file (the bundled sample data), checked with SQL afterwards.

use crate::kit::*;

fn decide(ledger: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["decide", ledger.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--operator", "tester"]);
    settle(&all)
}

/// Asserts a refusal (exit 3) naming `why`, and that nothing was written.
fn assert_refused(ledger: &std::path::Path, args: &[&str], why: &str) {
    let before = dump(ledger);
    let out = decide(ledger, args);
    assert_eq!(
        code(&out),
        3,
        "expected a refusal for {args:?}: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    assert_eq!(
        before,
        dump(ledger),
        "a refused decision wrote something: {args:?}"
    );
}

#[test]
fn refusals_name_the_rule_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    // applied needs a result id or evidence
    assert_refused(&l, &["2", "--applied"], "result id or evidence");
    // not applied where the events show a committed effect
    assert_refused(
        &l,
        &["1", "--not-applied", "--evidence", "no reply"],
        "committed effect report-8812",
    );
    // retry_same_key: conflict, not idempotent, expired key, deadline, no contract
    assert_refused(&l, &["7", "--retry-same-key"], "conflict");
    assert_refused(&l, &["4", "--retry-same-key"], "not verified idempotent");
    assert_refused(&l, &["3", "--retry-same-key"], "key expired");
    assert_refused(&l, &["6", "--retry-same-key"], "has passed");
    assert_refused(&l, &["13", "--retry-same-key"], "no op_types row");
    // a live reservation belongs to its owner
    assert_refused(
        &l,
        &["9", "--applied", "--result-id", "r"],
        "reservation is live",
    );
    // completed and not_applied change only through reopen
    assert_refused(
        &l,
        &["10", "--not-applied", "--evidence", "x"],
        "only through reopen",
    );
    assert_refused(
        &l,
        &["11", "--applied", "--evidence", "x"],
        "only through reopen",
    );
    // retry_pending only through cancel_retry or a worker
    assert_refused(
        &l,
        &["15", "--applied", "--evidence", "x"],
        "retry_pending changes only",
    );
    // cancel needs retry_pending
    assert_refused(&l, &["2", "--cancel-retry"], "needs retry_pending");
}

#[test]
fn applied_records_the_decision_and_the_state_together() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let v = version(&l, 1);
    let out = decide(
        &l,
        &[
            "1",
            "--applied",
            "--result-id",
            "report-8812",
            "--evidence",
            "provider lists it",
            "--expect-version",
            &v.to_string(),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 1), "completed");
    assert_eq!(version(&l, 1), v + 1);
    assert_eq!(
        query_text(&l, "SELECT result_id FROM operations WHERE id = 1"),
        "report-8812"
    );
    let row: (String, String, String, String, i64, String) = sql(&l)
        .query_row(
            "SELECT decision, from_state, to_state, operator, op_version, evidence FROM decisions WHERE op_id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            "applied".into(),
            "unknown".into(),
            "completed".into(),
            "tester".into(),
            v,
            "provider lists it".into()
        )
    );
}

#[test]
fn not_applied_over_a_committed_effect_needs_an_override_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    // --override without --note is a usage error (clap), exit 2
    let out = decide(
        &l,
        &["14", "--not-applied", "--evidence", "x", "--override"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = decide(
        &l,
        &[
            "14",
            "--not-applied",
            "--evidence",
            "gateway shows ord-88301 voided",
            "--override",
            "--note",
            "voided by finance, ticket FIN-221",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 14), "not_applied");
}

#[test]
fn retry_then_cancel_round_trips_and_a_claimed_retry_cannot_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let out = decide(&l, &["2", "--retry-same-key"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 2), "retry_pending");
    assert_eq!(
        query_text(
            &l,
            "SELECT status || ' ' || idem_key || ' ' || requested_by FROM retry_requests WHERE op_id = 2"
        ),
        "queued ord-7731-a tester"
    );
    let decision = query_i64(&l, "SELECT id FROM decisions WHERE op_id = 2");
    assert_eq!(
        query_i64(&l, "SELECT decision_id FROM retry_requests WHERE op_id = 2"),
        decision
    );

    let out = decide(&l, &["2", "--cancel-retry"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        state(&l, 2),
        "unknown",
        "cancel returns the state before the retry"
    );
    assert_eq!(
        query_text(&l, "SELECT status FROM retry_requests WHERE op_id = 2"),
        "cancelled"
    );

    // A worker claims op 15's request: cancelling is then refused.
    sql(&l)
        .execute(
            "UPDATE retry_requests SET status = 'claimed' WHERE op_id = 15",
            [],
        )
        .unwrap();
    assert_refused(&l, &["15", "--cancel-retry"], "no queued retry request");
}

#[test]
fn retrying_an_exhausted_operation_records_the_extra_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let out = decide(&l, &["5", "--retry-same-key"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("beyond the budget"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        query_i64(&l, "SELECT extra_attempt FROM decisions WHERE op_id = 5"),
        1
    );
}

#[test]
fn stale_reservation_can_be_settled() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let out = decide(
        &l,
        &[
            "8",
            "--not-applied",
            "--evidence",
            "payments shows no refund for pay_88121",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 8), "not_applied");
}

#[test]
fn reopen_undoes_only_while_nothing_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    assert_eq!(
        code(&decide(
            &l,
            &["1", "--applied", "--result-id", "report-8812"]
        )),
        0
    );
    let d = query_i64(&l, "SELECT id FROM decisions WHERE op_id = 1");
    let out = decide(
        &l,
        &["1", "--reopen", &d.to_string(), "--note", "wrong operation"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 1), "unknown");
    assert_eq!(
        query_i64(
            &l,
            "SELECT undoes FROM decisions WHERE op_id = 1 AND decision = 'reopen'"
        ),
        d
    );
    // Reopening the same decision again: the operation changed since.
    assert_refused(
        &l,
        &["1", "--reopen", &d.to_string()],
        "changed after decision",
    );
}

#[test]
fn a_stale_expected_version_is_a_conflict_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let v = version(&l, 2);
    // A worker writes the operation meanwhile.
    sql(&l)
        .execute("UPDATE operations SET version = version + 1, updated_at = '2026-11-29T23:00:00Z' WHERE id = 2", [])
        .unwrap();
    let before = dump(&l);
    let out = decide(
        &l,
        &[
            "2",
            "--applied",
            "--evidence",
            "x",
            "--expect-version",
            &v.to_string(),
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("version conflict") && err.contains("state unknown"),
        "{err}"
    );
    assert_eq!(before, dump(&l));
}

#[test]
fn racing_operators_one_wins_the_others_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let v = version(&l, 2).to_string();
    let children: Vec<_> = (0..6)
        .map(|i| {
            bin()
                .args([
                    "decide",
                    l.to_str().unwrap(),
                    "2",
                    "--applied",
                    "--evidence",
                ])
                .arg(format!("operator {i} saw it"))
                .args(["--expect-version", &v, "--operator"])
                .arg(format!("op{i}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| code(&c.wait_with_output().unwrap()))
        .collect();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 4).count(), 5, "{codes:?}");
    assert_eq!(
        query_i64(&l, "SELECT COUNT(*) FROM decisions WHERE op_id = 2"),
        1
    );
}

#[test]
fn operations_are_found_by_natural_key() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let out = settle(&[
        "show",
        l.to_str().unwrap(),
        "globex/place_order/ord-7731-a",
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["operation"]["id"], 2);
    let out = settle(&["show", l.to_str().unwrap(), "globex/place_order/nope"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no operation"), "{}", stderr(&out));
}

/// The account name of this process's uid, as `/etc/passwd` says: what
/// `settle` must record when neither `--operator` nor `SETTLE_OPERATOR` is
/// given, whatever `$USER` says.
fn account_of_this_uid() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
        })
}

fn decide_applied(l: &std::path::Path, op: &str) -> std::process::Command {
    let mut cmd = bin();
    cmd.args([
        "decide",
        l.to_str().unwrap(),
        op,
        "--applied",
        "--evidence",
        "x",
    ]);
    cmd
}

#[test]
fn deciding_needs_an_operator() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    // An empty name is no name: refused as a usage error, nothing written.
    let before = dump(&l);
    let out = decide_applied(&l, "2")
        .args(["--operator", " "])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("who is deciding"), "{}", stderr(&out));
    assert_eq!(before, dump(&l));

    let out = decide_applied(&l, "2")
        .env("SETTLE_OPERATOR", "from-env")
        .env("USER", "someone-else")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        query_text(&l, "SELECT operator FROM decisions WHERE op_id = 2"),
        "from-env"
    );
}

#[test]
fn without_a_name_given_the_decision_is_recorded_under_the_uid_account_not_user() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    // $USER lies (as under `su`) or is absent (cron, containers): the
    // account of the uid is who decided.
    let out = decide_applied(&l, "2")
        .env("USER", "not-the-uid-account")
        .env_remove("LOGNAME")
        .output()
        .unwrap();
    match account_of_this_uid() {
        Some(account) => {
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert_eq!(
                query_text(&l, "SELECT operator FROM decisions WHERE op_id = 2"),
                account
            );
        }
        // A uid without an account falls back to $USER.
        None => assert_eq!(
            query_text(&l, "SELECT operator FROM decisions WHERE op_id = 2"),
            "not-the-uid-account"
        ),
    }
}

#[test]
fn a_decision_waits_for_a_worker_holding_the_write_lock_then_sees_its_change() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let seen = version(&l, 2);
    // A worker claims the write lock and changes operation 2 slowly.
    let worker = sql(&l);
    worker.execute_batch("BEGIN IMMEDIATE").unwrap();
    worker
        .execute(
            "UPDATE operations SET state = 'completed', result_id = 'ord-1', version = version + 1 WHERE id = 2",
            [],
        )
        .unwrap();
    let mut operator = bin()
        .args([
            "decide",
            l.to_str().unwrap(),
            "2",
            "--retry-same-key",
            "--operator",
            "tester",
        ])
        .arg("--expect-version")
        .arg(seen.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The worker lets go only once the decision is waiting for its lock.
    wait_until_blocked_on_a_lock(&mut operator);
    worker.execute_batch("COMMIT").unwrap();
    let out = operator.wait_with_output().unwrap();
    // Not "database is locked": the decision waited, then found the
    // worker's version and wrote nothing.
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("state completed"), "{}", stderr(&out));
    assert_eq!(
        query_i64(&l, "SELECT COUNT(*) FROM retry_requests WHERE op_id = 2"),
        0
    );
    assert_eq!(state(&l, 2), "completed");
}

#[test]
fn show_says_when_the_key_really_expires_and_the_refusal_says_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    // Operation 3: the row sets no key expiry, the contract keeps keys 1d,
    // and it was created more than a day ago.
    let out = settle(&["show", l.to_str().unwrap(), "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("key expires"))
        .unwrap();
    assert!(line.contains("passed"), "{line}");
    assert!(line.contains("contract retention 1d"), "{line}");
    let refusal = text
        .lines()
        .find(|l| l.trim_start().starts_with("retry_same_key"))
        .unwrap();
    assert_eq!(refusal.matches("expired").count(), 1, "{refusal}");
    // Scripts get the same answer: created_at + 1d, not the row's null.
    let out = settle(&["show", l.to_str().unwrap(), "3", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let op = &json["operation"];
    assert!(op["key_expires_at"].is_null(), "{op}");
    let created = chrono::DateTime::parse_from_rfc3339(op["created_at"].as_str().unwrap()).unwrap();
    let expiry =
        chrono::DateTime::parse_from_rfc3339(op["key_expiry"]["at"].as_str().unwrap()).unwrap();
    assert_eq!(expiry - created, chrono::Duration::days(1));
}

#[test]
fn a_write_lock_held_past_the_wait_is_ledger_busy_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let before = dump(&l);
    // A service in the middle of a long transaction.
    let service = sql(&l);
    service.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = decide(&l, &["2", "--applied", "--result-id", "r-2", "--wait", "1"]);
    service.execute_batch("ROLLBACK").unwrap();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "ledger busy: another process has held the write lock for 1 s; nothing was written"
        ),
        "{err}"
    );
    assert!(err.contains("--wait SECONDS"), "{err}");
    assert!(!err.contains("database is locked"), "{err}");
    assert_eq!(before, dump(&l), "a busy decision wrote something");

    // Once the lock is gone the same command records.
    let out = decide(&l, &["2", "--applied", "--result-id", "r-2", "--wait", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
