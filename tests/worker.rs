//! `settle worker` through the real binary (issue 11 point 3): a queued
//! same-key retry runs once against a receiver and settles the operation;
//! two worker processes share 200 requests without running one twice; a
//! worker killed mid-retry leaves its claim to lapse and another finishes
//! it as a replay; SIGTERM lets a running retry finish; a rule that no
//! longer holds refuses the retry without running it.
//!
//! The receiver is a shell script keeping the receiver's side in files: one
//! line per run in `runs.log`, one file per effect in `effects/` (created
//! with O_EXCL, so a second run of a key replays the first effect).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use common::{bin, code, query_i64, query_text, settle, sql, state, stderr, stdout};
use settle::domain::{DecisionDraft, DecisionKind, OperationId};
use settle::store::{Access, Ledger};

/// A receiver and a ledger in one temp folder.
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ledger: PathBuf,
    receivers: PathBuf,
}

impl Setup {
    /// `n` operations `acme/place_order/k-<i>` in `unknown` after one timed
    /// out attempt, under an idempotent contract, adopted by settle.
    fn new(n: usize) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("effects")).unwrap();
        let script = root.join("receiver.sh");
        std::fs::write(
            &script,
            format!(
                r#"#!/bin/sh
D='{}'
echo "$SETTLE_KEY $SETTLE_ATTEMPT" >> "$D/runs.log"
if ! (set -C; echo "eff-$SETTLE_KEY" > "$D/effects/$SETTLE_KEY") 2>/dev/null; then
  echo "$SETTLE_KEY" >> "$D/replays.log"
fi
if [ -f "$D/slow" ]; then echo $$ > "$D/slow.pid"; sleep "$(cat "$D/slow")"; fi
cat "$D/effects/$SETTLE_KEY"
"#,
                root.display()
            ),
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .unwrap();
        let receivers = root.join("receivers.toml");
        std::fs::write(
            &receivers,
            format!(
                "[receivers.place_order]\nretry = [\"{}\"]\ntimeout_s = 60\n",
                script.display()
            ),
        )
        .unwrap();
        let ledger = root.join("ledger.db");
        let conn = sql(&ledger);
        conn.execute_batch(common::SERVICE_SCHEMA).unwrap();
        conn.execute_batch("BEGIN").unwrap();
        for i in 1..=n {
            conn.execute(
                "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                     max_attempts, created_at, updated_at, version)
                 VALUES (?1, 'acme', 'place_order', ?2, 'sha256:00', 'unknown', 3,
                     '2026-11-30T10:00:00Z', '2026-11-30T10:00:30Z', 1)",
                rusqlite::params![i as i64, format!("k-{i}")],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO attempts VALUES (?1, 1, '2026-11-30T10:00:00Z',
                     '2026-11-30T10:00:30Z', 'timeout', 'no reply', NULL)",
                [i as i64],
            )
            .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
        drop(conn);
        let out = settle(&["adopt", ledger.to_str().unwrap()]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        sql(&ledger)
            .execute(
                "INSERT INTO op_types (op_type, idempotent) VALUES ('place_order', 1)",
                [],
            )
            .unwrap();
        Setup {
            _dir: dir,
            root,
            ledger,
            receivers,
        }
    }

    /// Queues a same-key retry of operations 1..=n through the store, in
    /// one call (the CLI does one process per decision).
    fn queue_all(&self, n: usize) {
        let (mut ledger, _) = Ledger::open(&self.ledger, Access::ReadWrite).unwrap();
        let drafts: Vec<DecisionDraft> = (1..=n as i64)
            .map(|i| DecisionDraft {
                op_id: OperationId(i),
                kind: DecisionKind::RetrySameKey,
                result_id: None,
                evidence: None,
                note: None,
                override_committed: false,
                operator: "alice".to_string(),
                expected_version: 1,
                undoes: None,
            })
            .collect();
        for r in ledger.record_decisions(&drafts, Utc::now()).unwrap() {
            r.unwrap();
        }
    }

    fn worker(&self, extra: &[&str]) -> Command {
        let mut cmd = bin();
        cmd.arg("worker")
            .arg(&self.ledger)
            .arg("--receivers")
            .arg(&self.receivers)
            .args(extra);
        cmd
    }

    fn spawn_worker(&self, extra: &[&str]) -> Child {
        self.worker(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn lines(&self, file: &str) -> Vec<String> {
        std::fs::read_to_string(self.root.join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn effects(&self) -> usize {
        std::fs::read_dir(self.root.join("effects"))
            .unwrap()
            .count()
    }

    fn request(&self, column: &str) -> String {
        query_text(
            &self.ledger,
            &format!(
                "SELECT coalesce(CAST({column} AS TEXT), '') FROM retry_requests WHERE op_id = 1"
            ),
        )
    }
}

/// Waits for `ready`, failing after a bound far above what it needs.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < give_up, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Kills the process group of a receiver left sleeping by a killed worker.
fn kill_receiver(pid_file: &Path) {
    if let Ok(pid) = std::fs::read_to_string(pid_file) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", pid.trim())])
            .status();
    }
}

#[test]
fn a_queued_retry_of_an_effect_that_exists_completes_with_the_receivers_result() {
    let s = Setup::new(1);
    let out = settle(&[
        "decide",
        s.ledger.to_str().unwrap(),
        "1",
        "--retry-same-key",
        "--operator",
        "alice",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&s.ledger, 1), "retry_pending");
    // The first attempt did reach the receiver: the effect exists.
    std::fs::write(s.root.join("effects/k-1"), "eff-k-1\n").unwrap();

    let out = s.worker(&["--once"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("request 1 operation 1: done"), "{said}");
    assert!(said.contains("eff-k-1"), "{said}");

    assert_eq!(state(&s.ledger, 1), "completed");
    assert_eq!(
        query_text(&s.ledger, "SELECT result_id FROM operations WHERE id = 1"),
        "eff-k-1"
    );
    assert_eq!(s.request("status"), "done");
    assert_eq!(s.request("outcome"), "eff-k-1");
    assert_eq!(s.effects(), 1, "the retry made no second effect");
    assert_eq!(s.lines("replays.log"), ["k-1"]);
    assert_eq!(s.lines("runs.log"), ["k-1 2"], "run once, as attempt 2");
    assert_eq!(
        query_text(
            &s.ledger,
            "SELECT outcome FROM attempts WHERE op_id = 1 AND attempt = 2"
        ),
        "success"
    );
    assert_eq!(
        query_i64(
            &s.ledger,
            "SELECT count(*) FROM events WHERE op_id = 1 AND event = 'committed'
               AND detail LIKE '%eff-k-1%'"
        ),
        1
    );
}

#[test]
fn two_workers_run_each_of_200_requests_exactly_once() {
    let s = Setup::new(200);
    s.queue_all(200);
    let a = s.spawn_worker(&["--once", "--concurrency", "2", "--name", "a"]);
    let b = s.spawn_worker(&["--once", "--concurrency", "2", "--name", "b"]);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(code(&a), 0, "{}", stderr(&a));
    assert_eq!(code(&b), 0, "{}", stderr(&b));

    let mut runs = s.lines("runs.log");
    assert_eq!(runs.len(), 200, "every request ran exactly once");
    runs.sort();
    runs.dedup();
    assert_eq!(runs.len(), 200, "no key ran twice");
    assert_eq!(s.effects(), 200);
    assert!(s.lines("replays.log").is_empty());
    let q = |q: &str| query_i64(&s.ledger, q);
    assert_eq!(
        q("SELECT count(*) FROM retry_requests WHERE status = 'done' AND runs = 1"),
        200
    );
    assert_eq!(
        q("SELECT count(*) FROM retry_requests WHERE status = 'claimed'"),
        0
    );
    assert_eq!(
        q("SELECT count(*) FROM operations WHERE state = 'completed'"),
        200
    );
    assert_eq!(q("SELECT count(*) FROM attempts WHERE attempt = 2"), 200);
    let printed = stdout(&a).lines().count() + stdout(&b).lines().count();
    assert_eq!(printed, 200, "one line per request finished");
}

#[test]
fn a_worker_killed_mid_retry_leaves_its_claim_to_lapse_and_another_replays_it() {
    let s = Setup::new(1);
    s.queue_all(1);
    std::fs::write(s.root.join("slow"), "30").unwrap();
    let mut first = s.spawn_worker(&["--lease-s", "1", "--name", "first"]);
    wait_for("the first run to reach the receiver", || {
        s.root.join("slow.pid").exists()
    });
    first.kill().unwrap(); // SIGKILL: nothing recorded, the claim stays
    first.wait().unwrap();
    kill_receiver(&s.root.join("slow.pid"));
    assert_eq!(s.request("status"), "claimed");
    assert_eq!(s.request("claimed_by"), "first");

    std::fs::remove_file(s.root.join("slow")).unwrap();
    let second = s.spawn_worker(&["--lease-s", "1", "--name", "second"]);
    wait_for("the second worker to finish the request", || {
        s.request("status") == "done"
    });
    signal(&second, "-TERM");
    let out = second.wait_with_output().unwrap();
    assert_eq!(
        code(&out),
        0,
        "SIGTERM stops an idle worker cleanly: {}",
        stderr(&out)
    );

    assert_eq!(s.request("claimed_by"), "second");
    assert_eq!(s.request("runs"), "2");
    assert_eq!(state(&s.ledger, 1), "completed");
    assert_eq!(s.effects(), 1, "the second run replayed the first effect");
    assert_eq!(s.lines("replays.log"), ["k-1"]);
    assert_eq!(
        s.lines("runs.log"),
        ["k-1 2", "k-1 2"],
        "same key, same attempt"
    );
    assert_eq!(
        query_i64(&s.ledger, "SELECT count(*) FROM attempts WHERE op_id = 1"),
        2,
        "the killed run left no attempt row; the replay left one"
    );
}

#[test]
fn sigterm_lets_the_running_retry_finish_and_be_recorded() {
    let s = Setup::new(1);
    s.queue_all(1);
    std::fs::write(s.root.join("slow"), "1").unwrap();
    let worker = s.spawn_worker(&["--name", "w"]);
    wait_for("the retry to start", || s.root.join("slow.pid").exists());
    signal(&worker, "-TERM");
    let out = worker.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("request 1 operation 1: done"),
        "{}",
        stdout(&out)
    );
    assert_eq!(s.request("status"), "done");
    assert_eq!(state(&s.ledger, 1), "completed");
}

#[test]
fn a_retry_whose_key_expired_while_queued_is_refused_without_running() {
    let s = Setup::new(1);
    s.queue_all(1);
    // The service learns the receiver forgets keys sooner than it thought.
    sql(&s.ledger)
        .execute(
            "UPDATE operations SET key_expires_at = '2026-11-30T11:00:00Z', version = version + 1
             WHERE id = 1",
            [],
        )
        .unwrap();
    let out = s.worker(&["--once"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("failed"), "{}", stdout(&out));
    assert!(
        s.lines("runs.log").is_empty(),
        "the receiver was never asked"
    );
    assert_eq!(s.request("status"), "failed");
    assert!(
        s.request("outcome").contains("key expired"),
        "{}",
        s.request("outcome")
    );
    assert_eq!(state(&s.ledger, 1), "unknown", "back in the triage queue");
    assert_eq!(
        query_i64(
            &s.ledger,
            "SELECT count(*) FROM events WHERE event = 'retry_refused'"
        ),
        1
    );
}
