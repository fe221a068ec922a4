//! `settle worker` through the real binaries, against the reference receiver
//! (`settle receiver`, its own SQLite database): a queued same-key retry of
//! an effect that exists completes with the receiver's result and no second
//! effect; two worker processes share 200 requests without running one twice;
//! a worker killed mid-retry leaves its claim to lapse and another finishes
//! it as a replay; SIGTERM lets a running retry finish; a rule that no longer
//! holds refuses the retry without running it.

use crate::kit::backends;
use crate::kit::pg;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::kit::{bin, code, settle, sql, stderr, stdout};
use backends::{Backend, TestLedger, each_backend};
use chrono::Utc;
use settle::domain::{DecisionDraft, DecisionKind, OperationId};
use settle::store::{Access, Ledger};

/// A ledger (a SQLite file or a PostgreSQL database, see
/// `kit/backends.rs`), the reference receiver's database, and receivers
/// files pointing at it, in one temp folder.
struct Setup<'l> {
    _dir: tempfile::TempDir,
    root: PathBuf,
    l: &'l TestLedger,
    ledger: PathBuf,
    receiver_db: PathBuf,
}

impl<'l> Setup<'l> {
    /// `n` operations `acme/place_order/k-<i>` in `unknown` after one timed
    /// out attempt, under an idempotent contract, adopted by settle.
    fn new(l: &'l TestLedger, n: usize) -> Setup<'l> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        // One statement of many rows, in SQL both databases take.
        let rows = |row: &dyn Fn(usize) -> String| (1..=n).map(row).collect::<Vec<_>>().join(",\n");
        l.exec(&format!(
            "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES {};
             INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
             VALUES {};",
            rows(&|i| format!(
                "({i}, 'acme', 'place_order', 'k-{i}', 'sha256:00', 'unknown', 3,
                  '2026-11-30T10:00:00Z', '2026-11-30T10:00:30Z', 1)"
            )),
            rows(&|i| format!(
                "({i}, 1, '2026-11-30T10:00:00Z', '2026-11-30T10:00:30Z', 'timeout', 'no reply', NULL)"
            )),
        ));
        let out = settle(&["adopt", l.arg()]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        l.exec("INSERT INTO op_types (op_type, idempotent) VALUES ('place_order', TRUE)");
        Setup {
            _dir: dir,
            receiver_db: root.join("receiver.db"),
            root,
            l,
            ledger: l.ledger.clone(),
        }
    }

    /// The one value a query on the ledger returns, as text.
    fn text(&self, q: &str) -> String {
        match self.l.backend {
            Backend::Sqlite => crate::kit::query_text(&self.ledger, q),
            Backend::Postgres => pg::connect(&self.ledger)
                .query_one(q, &[])
                .unwrap()
                .get::<_, String>(0),
        }
    }

    fn count(&self, q: &str) -> i64 {
        self.l.query_i64(q)
    }

    fn state(&self, op: i64) -> String {
        self.text(&format!("SELECT state FROM operations WHERE id = {op}"))
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

    /// A receivers file running `settle receiver retry` on this setup's
    /// database, replying `delay_ms` after the effect is committed.
    fn receivers(&self, delay_ms: u64) -> PathBuf {
        let path = self.root.join(format!("receivers-{delay_ms}.toml"));
        std::fs::write(
            &path,
            format!(
                "[receivers.place_order]\nretry = [{:?}, \"receiver\", \"retry\", \"--db\", {:?}, \"--reply-delay-ms\", \"{delay_ms}\"]\ntimeout_s = 60\n",
                env!("CARGO_BIN_EXE_settle"),
                self.receiver_db.to_str().unwrap()
            ),
        )
        .unwrap();
        path
    }

    fn worker(&self, delay_ms: u64, extra: &[&str]) -> Command {
        let mut cmd = bin();
        cmd.arg("worker")
            .arg(&self.ledger)
            .arg("--receivers")
            .arg(self.receivers(delay_ms))
            .args(extra);
        cmd
    }

    fn spawn_worker(&self, delay_ms: u64, extra: &[&str]) -> Child {
        self.worker(delay_ms, extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// A count in the receiver's database; 0 until the receiver has
    /// created it and its tables.
    fn at_receiver(&self, q: &str) -> i64 {
        if !self.receiver_db.exists() {
            return 0;
        }
        sql(&self.receiver_db)
            .query_row(q, [], |r| r.get(0))
            .unwrap_or(0)
    }

    /// The receiver's retry calls, as `key answer` in order.
    fn calls(&self) -> Vec<String> {
        if !self.receiver_db.exists() {
            return Vec::new();
        }
        let conn = sql(&self.receiver_db);
        let mut stmt = conn
            .prepare(
                "SELECT idem_key || ' ' || answer FROM calls WHERE command = 'retry' ORDER BY id",
            )
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn request(&self, column: &str) -> String {
        self.text(&format!(
            "SELECT coalesce(CAST({column} AS TEXT), '') FROM retry_requests WHERE op_id = 1"
        ))
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

#[test]
fn a_queued_retry_of_an_effect_that_exists_completes_with_the_receivers_result() {
    each_backend("worker_replay", |l| {
        let s = Setup::new(l, 1);
        let out = settle(&[
            "decide",
            s.ledger.to_str().unwrap(),
            "1",
            "--retry-same-key",
            "--operator",
            "alice",
        ]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(s.state(1), "retry_pending");
        // The first attempt did reach the receiver: the effect exists.
        let out = settle(&[
            "receiver",
            "record",
            "--db",
            s.receiver_db.to_str().unwrap(),
            "--account",
            "acme",
            "--op-type",
            "place_order",
            "--key",
            "k-1",
            "--result-id",
            "eff-k-1",
        ]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));

        let out = s.worker(0, &["--once"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let said = stdout(&out);
        assert!(said.contains("request 1 operation 1: done"), "{said}");
        assert!(said.contains("eff-k-1"), "{said}");

        assert_eq!(s.state(1), "completed");
        assert_eq!(
            s.text("SELECT result_id FROM operations WHERE id = 1"),
            "eff-k-1"
        );
        assert_eq!(s.request("status"), "done");
        assert_eq!(s.request("outcome"), "eff-k-1");
        assert_eq!(
            s.at_receiver("SELECT count(*) FROM effects"),
            1,
            "no second effect"
        );
        assert_eq!(s.calls(), ["k-1 replay"]);
        assert_eq!(
            s.text("SELECT outcome FROM attempts WHERE op_id = 1 AND attempt = 2"),
            "success"
        );
        assert_eq!(
            s.count(
                "SELECT count(*) FROM events WHERE op_id = 1 AND event = 'committed'
               AND detail LIKE '%eff-k-1%'"
            ),
            1
        );
    });
}

#[test]
fn two_workers_run_each_of_200_requests_exactly_once() {
    each_backend("worker_two", |l| {
        let s = Setup::new(l, 200);
        s.queue_all(200);
        let a = s.spawn_worker(0, &["--once", "--concurrency", "2", "--name", "a"]);
        let b = s.spawn_worker(0, &["--once", "--concurrency", "2", "--name", "b"]);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert_eq!(code(&a), 0, "{}", stderr(&a));
        assert_eq!(code(&b), 0, "{}", stderr(&b));

        let calls = s.calls();
        assert_eq!(calls.len(), 200, "every request ran exactly once");
        assert!(
            calls.iter().all(|c| c.ends_with(" effect")),
            "no replay: {calls:?}"
        );
        assert_eq!(
            s.at_receiver("SELECT count(DISTINCT idem_key) FROM effects"),
            200
        );
        assert_eq!(s.at_receiver("SELECT count(*) FROM effects"), 200);
        let q = |q: &str| s.count(q);
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
    });
}

#[test]
fn a_worker_killed_mid_retry_leaves_its_claim_to_lapse_and_another_replays_it() {
    each_backend("worker_killed", |l| {
        let s = Setup::new(l, 1);
        s.queue_all(1);
        // The receiver commits the effect, then holds its reply back: the
        // worker is killed before it hears it.
        let mut first = s.spawn_worker(20_000, &["--lease-s", "1", "--name", "first"]);
        wait_for("the first run to commit at the receiver", || {
            s.at_receiver("SELECT count(*) FROM effects") == 1
        });
        first.kill().unwrap(); // SIGKILL: nothing recorded, the claim stays
        first.wait().unwrap();
        assert_eq!(s.request("status"), "claimed");
        assert_eq!(s.request("claimed_by"), "first");

        let second = s.spawn_worker(0, &["--lease-s", "1", "--name", "second"]);
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
        assert_eq!(s.state(1), "completed");
        assert_eq!(
            s.at_receiver("SELECT count(*) FROM effects"),
            1,
            "one effect"
        );
        assert_eq!(
            s.calls(),
            ["k-1 effect", "k-1 replay"],
            "the key made it a replay"
        );
        assert_eq!(
            s.count("SELECT count(*) FROM attempts WHERE op_id = 1"),
            2,
            "the killed run left no attempt row; the replay left one"
        );
    });
}

#[test]
fn sigterm_lets_the_running_retry_finish_and_be_recorded() {
    each_backend("worker_sigterm", |l| {
        let s = Setup::new(l, 1);
        s.queue_all(1);
        let worker = s.spawn_worker(1_000, &["--name", "w"]);
        wait_for("the retry to reach the receiver", || {
            s.at_receiver("SELECT count(*) FROM effects") == 1
        });
        signal(&worker, "-TERM");
        let out = worker.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            stdout(&out).contains("request 1 operation 1: done"),
            "{}",
            stdout(&out)
        );
        assert_eq!(s.request("status"), "done");
        assert_eq!(s.state(1), "completed");
    });
}

#[test]
fn a_retry_whose_key_expired_while_queued_is_refused_without_running() {
    each_backend("worker_expired", |l| {
        let s = Setup::new(l, 1);
        s.queue_all(1);
        // The service learns the receiver forgets keys sooner than it thought.
        s.l.exec(
            "UPDATE operations SET key_expires_at = '2026-11-30T11:00:00Z', version = version + 1
         WHERE id = 1",
        );
        let out = s.worker(0, &["--once"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains("failed"), "{}", stdout(&out));
        assert!(s.calls().is_empty(), "the receiver was never asked");
        assert_eq!(s.request("status"), "failed");
        assert!(
            s.request("outcome").contains("key expired"),
            "{}",
            s.request("outcome")
        );
        assert_eq!(s.state(1), "unknown", "back in the triage queue");
        assert_eq!(
            s.count("SELECT count(*) FROM events WHERE event = 'retry_refused'"),
            1
        );
    });
}

#[test]
fn without_a_retry_for_the_op_type_nothing_is_sent_and_no_attempt_is_spent() {
    each_backend("worker_no_retry", |l| {
        let s = Setup::new(l, 1);
        s.queue_all(1);
        let out = bin()
            .args(["worker", s.ledger.to_str().unwrap(), "--once"])
            .env("XDG_CONFIG_HOME", s.root.join("no-config"))
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "no receivers file is a usage error");
        assert!(stderr(&out).contains("--receivers"), "{}", stderr(&out));
        assert_eq!(s.request("status"), "queued", "nothing claimed");

        let other = s.root.join("other.toml");
        std::fs::write(
            &other,
            "[receivers.create_report]\nretry = [\"/bin/false\"]\n",
        )
        .unwrap();
        let out = bin()
            .arg("worker")
            .arg(&s.ledger)
            .args(["--once", "--receivers"])
            .arg(&other)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains("(not run)"), "{}", stdout(&out));
        assert_eq!(s.request("status"), "failed");
        assert_eq!(s.state(1), "unknown");
        assert_eq!(
            s.count("SELECT count(*) FROM attempts WHERE op_id = 1"),
            1,
            "only the service's own attempt"
        );
    });
}
