//! The PostgreSQL service: ledger-v1's write path as a pgbench script (the
//! same three transactions as the SQLite service), 16 clients at
//! synchronous commit with fsync on, on a database loaded as a service
//! wrote it and on a copy settle adopted, alternating; and one client
//! committing every 10 ms while `settle adopt` runs on a third copy. The
//! cluster is the tests' throwaway one, removed when the benchmark ends.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::{ratio, settle_bin, waits_line};

#[path = "../../src/store/postgres/testing.rs"]
mod cluster;

/// The service's write path, per operation, as pgbench runs it: the
/// project's script, so the benchmark and a hand run measure the same.
const WRITE_PATH: &str = include_str!("../../scripts/pg-service-write.sql");

/// Clients and seconds per pgbench run.
const CLIENTS: &str = "16";
const SECONDS: &str = "10";

/// pgbench's transactions per second for the write path on `address`.
fn pgbench(address: &str, script: &Path) -> Result<f64, String> {
    let out = Command::new("pgbench")
        .args(["-n", "-c", CLIENTS, "-j", "2", "-T", SECONDS, "-f"])
        .arg(script)
        .arg(address)
        .output()
        .map_err(|e| format!("running pgbench: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "pgbench: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    text.lines()
        .find_map(|l| {
            l.strip_prefix("tps = ")
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .ok_or_else(|| format!("pgbench printed no tps: {text}"))
}

fn adopt(address: &str) -> Result<Duration, String> {
    let start = Instant::now();
    let out = Command::new(settle_bin())
        .args(["adopt", address])
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("running settle adopt: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "settle adopt: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(start.elapsed())
}

/// A fresh database loaded with `pristine`'s rows, as an address.
fn loaded(pristine: &Path, hint: &str) -> Result<String, String> {
    let db = cluster::fresh_database(hint)
        .ok_or("no PostgreSQL server binaries: install the postgresql package")?;
    let address = db.to_str().ok_or("address is not UTF-8")?.to_string();
    crate::pg_load::load(pristine, &address)?;
    Ok(address)
}

/// The table lines for PostgreSQL at `n` operations.
pub fn measure(n: u64, pristine: &Path, rounds: usize) -> Result<Vec<String>, String> {
    let before = loaded(pristine, "tax before")?;
    let mut admin = postgres::Client::connect(&before, postgres::NoTls)
        .map_err(|e| format!("{before}: {e}"))?;
    // The tests' cluster runs without fsync; a service's does not. One
    // statement each: ALTER SYSTEM may not run in a transaction block.
    for sql in [
        "ALTER SYSTEM SET fsync = on",
        "ALTER SYSTEM SET synchronous_commit = on",
        "SELECT pg_reload_conf()",
    ] {
        admin
            .batch_execute(sql)
            .map_err(|e| format!("{sql}: {e}"))?;
    }
    drop(admin);
    let after = loaded(pristine, "tax after")?;
    let during = during_adoption(&loaded(pristine, "tax during")?, n)?;
    adopt(&after)?;
    let script = std::env::temp_dir().join(format!("settle-tax-{}.sql", std::process::id()));
    std::fs::write(&script, WRITE_PATH).map_err(|e| format!("{}: {e}", script.display()))?;
    let (mut b, mut a) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [(&before, false), (&after, true)]
        } else {
            [(&after, true), (&before, false)]
        };
        for (address, adopted) in order {
            let tps = pgbench(address, &script)?;
            eprintln!(
                "  round {round} {}: {tps:.0} tps",
                if adopted { "after" } else { "before" }
            );
            if adopted { &mut a } else { &mut b }.push(tps);
        }
    }
    let _ = std::fs::remove_file(&script);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    let (mb, ma) = (median(&mut b), median(&mut a));
    Ok(vec![
        during,
        format!(
            "| PostgreSQL {n} ops, pgbench write path, {CLIENTS} clients, {SECONDS} s, synchronous commit (median of {rounds}; throughput) | {mb:.0} tps | {ma:.0} tps | {} |",
            ratio(ma, mb)
        ),
    ])
}

/// One client committing an operation every 10 ms while `settle adopt`
/// runs: its slowest commit, how many took over 100 ms, how many failed.
fn during_adoption(address: &str, n: u64) -> Result<String, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (address, stop) = (address.to_string(), stop.clone());
        std::thread::spawn(move || -> Result<(Vec<Duration>, u64), String> {
            let mut c =
                postgres::Client::connect(&address, postgres::NoTls).map_err(|e| e.to_string())?;
            let (mut waits, mut failed) = (Vec::new(), 0);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                let key = format!("during-{i}");
                let r = c.execute(
                    "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                        max_attempts, created_at, updated_at, version)
                     VALUES ('svc', 'place_order', $1, 'sha256:00', 'reserved', 3, now(), now(), 1)",
                    &[&key],
                );
                match r {
                    Ok(_) => waits.push(start.elapsed()),
                    Err(_) => failed += 1,
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok((waits, failed))
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let took = adopt(address);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (waits, failed) = writer
        .join()
        .map_err(|_| "the service thread panicked".to_string())??;
    Ok(waits_line(
        &format!("PostgreSQL {n} ops"),
        took?,
        waits,
        failed,
    ))
}
