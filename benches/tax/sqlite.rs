//! The SQLite service: ledger-v1's write path as a service runs it (per
//! operation: reserve it; insert the attempt and its start event; insert the
//! commit event, finish the attempt and complete the operation; each step
//! its own transaction, WAL), timed on a copy of the ledger left as the
//! service wrote it and on a copy settle adopted, in alternating order; and
//! a service committing every 10 ms while `settle adopt` runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use crate::pg_service::Commits;
use crate::report::{median, ratio, settle_bin, waits_line};

/// A timestamp in the form the generator writes.
const NOW: &str = "2026-12-01T12:00:00Z";

/// The service's connection: WAL, the given synchronous level, a 5 s busy
/// timeout, as services configure SQLite.
fn service(path: &Path, sync: &str) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(5))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", sync)?;
    Ok(c)
}

/// Reserves one operation (the service's first transaction); its id.
fn reserve(c: &Connection, key: &str) -> rusqlite::Result<i64> {
    c.execute_batch("BEGIN")?;
    c.prepare_cached(
        "INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state,
            max_attempts, created_at, updated_at, version)
         VALUES ('svc', 'place_order', ?1, 'sha256:00', '{\"n\":1}', 'reserved', 3, ?2, ?2, 1)",
    )?
    .execute(params![key, NOW])?;
    let id = c.last_insert_rowid();
    c.execute_batch("COMMIT")?;
    Ok(id)
}

/// The attempt and the completion of operation `op` (the service's second
/// and third transactions).
fn attempt_and_complete(c: &Connection, op: i64, result: &str) -> rusqlite::Result<()> {
    c.execute_batch("BEGIN")?;
    c.prepare_cached(
        "INSERT INTO attempts (op_id, attempt, started_at, outcome) VALUES (?1, 1, ?2, 'pending')",
    )?
    .execute(params![op, NOW])?;
    c.prepare_cached(
        "INSERT INTO events (op_id, attempt, at, event) VALUES (?1, 1, ?2, 'started')",
    )?
    .execute(params![op, NOW])?;
    c.execute_batch("COMMIT")?;
    c.execute_batch("BEGIN")?;
    c.prepare_cached(
        "INSERT INTO events (op_id, attempt, at, event, detail) VALUES (?1, 1, ?2, 'committed', '{}')",
    )?
    .execute(params![op, NOW])?;
    c.prepare_cached(
        "UPDATE attempts SET ended_at = ?2, outcome = 'ok' WHERE op_id = ?1 AND attempt = 1",
    )?
    .execute(params![op, NOW])?;
    c.prepare_cached(
        "UPDATE operations SET state = 'completed', result_id = ?2, updated_at = ?3,
            version = version + 1 WHERE id = ?1",
    )?
    .execute(params![op, result, NOW])?;
    c.execute_batch("COMMIT")
}

/// The time `writes` operations take through the whole write path.
fn write_path(path: &Path, sync: &str, writes: u64, tag: &str) -> rusqlite::Result<Duration> {
    let c = service(path, sync)?;
    let start = Instant::now();
    for i in 0..writes {
        let op = reserve(&c, &format!("{tag}-{i}"))?;
        attempt_and_complete(&c, op, &format!("r-{tag}-{i}"))?;
    }
    Ok(start.elapsed())
}

/// Copies the pristine ledger to `name` in the cache folder (fresh each
/// run: the timed runs add operations).
fn copy(dir: &Path, n: u64, pristine: &Path, name: &str) -> Result<PathBuf, String> {
    let to = dir.join(format!("tax-{n}-{name}.db"));
    remove(&to);
    std::fs::copy(pristine, &to).map_err(|e| format!("copying to {}: {e}", to.display()))?;
    Ok(to)
}

/// Removes a ledger copy with its WAL and settle's read model beside it.
fn remove(ledger: &Path) {
    for suffix in ["", "-wal", "-shm", "-settle", "-settle-wal", "-settle-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", ledger.display()));
    }
}

fn adopt(path: &Path) -> Result<Duration, String> {
    let start = Instant::now();
    let out = Command::new(settle_bin())
        .arg("adopt")
        .arg(path)
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("running settle adopt: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "settle adopt {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(start.elapsed())
}

/// The table lines for a ledger of `n` operations.
pub fn measure(
    dir: &Path,
    n: u64,
    pristine: &Path,
    writes: u64,
    rounds: usize,
) -> Result<Vec<String>, String> {
    let mut lines = vec![during_adoption(dir, n, pristine)?];
    let before = copy(dir, n, pristine, "before")?;
    let after = copy(dir, n, pristine, "after")?;
    adopt(&after)?;
    for sync in ["NORMAL", "FULL"] {
        let (mut b, mut a) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let tag = format!("{sync}-{round}");
            // Alternate which copy goes first, so neither always finds the
            // page cache the other warmed.
            let order = if round % 2 == 0 {
                [(&before, false), (&after, true)]
            } else {
                [(&after, true), (&before, false)]
            };
            for (path, adopted) in order {
                let t = write_path(path, sync, writes, &tag).map_err(|e| e.to_string())?;
                eprintln!(
                    "  {sync} round {round} {}: {:.3} s",
                    if adopted { "after" } else { "before" },
                    t.as_secs_f64()
                );
                if adopted { &mut a } else { &mut b }.push(t);
            }
        }
        let (mb, ma) = (median(&b), median(&a));
        lines.push(format!(
            "| SQLite {n} ops, {writes} operations written, synchronous={sync} (median of {rounds}) | {:.3} s | {:.3} s | {} |",
            mb.as_secs_f64(),
            ma.as_secs_f64(),
            ratio(ma.as_secs_f64(), mb.as_secs_f64())
        ));
    }
    remove(&before);
    remove(&after);
    Ok(lines)
}

/// A service committing one reservation every 10 ms to `path` while
/// `work` runs; a failed commit is rolled back.
fn commits_during<R>(path: &Path, work: impl FnOnce() -> R) -> Result<(R, Commits), String> {
    let path = path.to_path_buf();
    crate::pg_service::service_during(
        move || service(&path, "NORMAL").map_err(|e| e.to_string()),
        |c: &mut Connection, key: &str| {
            reserve(c, key).map(drop).map_err(|e| {
                let _ = c.execute_batch("ROLLBACK");
                e.to_string()
            })
        },
        work,
    )
}

/// A service committing every 10 ms while `settle adopt` adopts a copy of
/// the ledger, then as long again with settle gone: what this machine's
/// disk makes a commit wait anyway.
pub fn during_adoption(dir: &Path, n: u64, pristine: &Path) -> Result<String, String> {
    let path = copy(dir, n, pristine, "during")?;
    let (took, seen) = commits_during(&path, || adopt(&path))?;
    let took = took?;
    let ((), alone) = commits_during(&path, || std::thread::sleep(took))?;
    remove(&path);
    Ok(waits_line(&format!("SQLite {n} ops"), took, &seen, &alone))
}
