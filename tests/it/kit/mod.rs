//! Shared helpers for the integration tests: run the real binary, build
//! ledgers in temp folders, read them back with plain SQL.

pub mod backends;
pub mod jobqueue;
pub mod node;
pub mod pg;
pub mod pty;
pub mod py;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const SERVICE_SCHEMA: &str = "
CREATE TABLE operations (id INTEGER PRIMARY KEY, account TEXT NOT NULL, op_type TEXT NOT NULL,
  idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL, params TEXT, state TEXT NOT NULL,
  result_id TEXT, max_attempts INTEGER NOT NULL, deadline_at TEXT, lease_expires_at TEXT,
  key_expires_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 0, UNIQUE (account, op_type, idem_key));
CREATE TABLE attempts (op_id INTEGER NOT NULL, attempt INTEGER NOT NULL, started_at TEXT NOT NULL,
  ended_at TEXT, outcome TEXT NOT NULL, error TEXT, response TEXT, PRIMARY KEY (op_id, attempt));
CREATE TABLE events (id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, attempt INTEGER,
  at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT);
";

pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_settle"));
    cmd.env_remove("SETTLE_OPERATOR").env("NO_COLOR", "1");
    cmd
}

pub fn settle(args: &[&str]) -> Output {
    bin().args(args).output().expect("run settle")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `id` of each line of a `--format jsonl` output, in its order.
pub fn jsonl_ids(out: &Output) -> Vec<i64> {
    stdout(out)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

/// A fresh sample ledger from `settle demo DIR --no-console`.
pub fn demo_ledger(dir: &Path) -> PathBuf {
    let out = settle(&["demo", dir.join("demo").to_str().unwrap(), "--no-console"]);
    assert_eq!(code(&out), 0, "demo failed: {}", stderr(&out));
    dir.join("demo").join("ledger.db")
}

pub fn sql(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// `n` operations from id `from`, each with one failed attempt, as a
/// service writes them.
pub fn write_failed_ops(path: &Path, from: i64, n: i64) {
    let to = from + n - 1;
    sql(path)
        .execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to})
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             SELECT i, printf('acct-%03d', i % 50), 'charge', printf('k-%06d', i),
                 'sha256:00', 'unknown', 3, '2026-11-06T10:00:00Z', '2026-11-06T10:00:00Z', 1
             FROM n;
             INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
             SELECT id, 1, '2026-11-06T10:00:00Z', 'error', 'timeout'
             FROM operations WHERE id >= {from};"
        ))
        .unwrap();
}

pub fn query_i64(path: &Path, q: &str) -> i64 {
    sql(path).query_row(q, [], |r| r.get(0)).unwrap()
}

pub fn query_text(path: &Path, q: &str) -> String {
    sql(path).query_row(q, [], |r| r.get(0)).unwrap()
}

/// Every row of the tables a decision may touch, as text, to prove that a
/// refused decision wrote nothing.
pub fn dump(path: &Path) -> String {
    let conn = sql(path);
    let mut out = String::new();
    for table in [
        "operations",
        "attempts",
        "events",
        "decisions",
        "retry_requests",
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
            .unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let mut line = String::new();
                for i in 0..n {
                    let v: rusqlite::types::Value = r.get(i)?;
                    line.push_str(&format!("{v:?}|"));
                }
                Ok(line)
            })
            .unwrap();
        for row in rows {
            out.push_str(table);
            out.push(':');
            out.push_str(&row.unwrap());
            out.push('\n');
        }
    }
    out
}

pub fn version(path: &Path, op: i64) -> i64 {
    query_i64(
        path,
        &format!("SELECT version FROM operations WHERE id = {op}"),
    )
}

pub fn state(path: &Path, op: i64) -> String {
    query_text(
        path,
        &format!("SELECT state FROM operations WHERE id = {op}"),
    )
}

/// Waits until `child` sleeps in SQLite's busy handler, which is where a
/// write waits for a lock another connection holds: the moment to let the
/// holder go. Linux names where a process sleeps in `/proc/PID/wchan`, and
/// settle sleeps nowhere else on its way to a write, so this is a sync point
/// rather than a guess at how long starting up takes. A child that never
/// meets the lock never sleeps there: this fails instead of passing on.
pub fn wait_until_blocked_on_a_lock(child: &mut std::process::Child) {
    let wchan = format!("/proc/{}/wchan", child.id());
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("it finished ({status}) without waiting for the lock");
        }
        let sleeping_in = std::fs::read_to_string(&wchan).unwrap_or_default();
        if sleeping_in.contains("nanosleep") {
            return;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "it never waited for the lock (last seen in {sleeping_in:?})"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// A receivers file in `dir` for `place_order` on the reference receiver
/// (`settle receiver`, its own SQLite database `receiver.db` in `dir`),
/// keeping keys `retention_s`, with `flaw` (its hidden test flaws),
/// `effects` and `faults` as asked. Returns the file and the database.
pub fn reference_receivers(
    dir: &Path,
    retention_s: i64,
    flaw: Option<&str>,
    effects: bool,
    faults: bool,
) -> (PathBuf, PathBuf) {
    let db = dir.join("receiver.db");
    let bin = env!("CARGO_BIN_EXE_settle");
    let q = |args: &[&str]| {
        let mut all = vec![bin, "receiver"];
        all.extend_from_slice(args);
        serde_json::to_string(&all).unwrap()
    };
    let db_s = db.to_str().unwrap();
    let retention = retention_s.to_string();
    let mut retry = vec!["retry", "--db", db_s, "--retention-s", &retention];
    if let Some(flaw) = flaw {
        retry.extend(["--flaw", flaw]);
    }
    let mut toml = format!(
        "[receivers.place_order]\nlookup = {}\nretry = {}\n",
        q(&["lookup", "--db", db_s]),
        q(&retry)
    );
    if effects {
        toml += &format!("effects = {}\n", q(&["effects", "--db", db_s]));
    }
    if faults {
        toml += "faults = true\n";
    }
    let receivers = dir.join("receivers.toml");
    std::fs::write(&receivers, toml).unwrap();
    (receivers, db)
}
