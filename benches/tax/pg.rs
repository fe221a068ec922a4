//! The PostgreSQL service: ledger-v1's write path as a pgbench script (the
//! same three transactions as the SQLite service), 16 clients at
//! synchronous commit with fsync on, on a database loaded as a service
//! wrote it and on a copy settle adopted (and with `--pg-each-index`, on
//! adopted copies less each index settle keeps on a service's table),
//! interleaved, with the share of the service's updates that were HOT;
//! and one client
//! committing every 10 ms while `settle adopt` runs on a third copy. The
//! cluster is a throwaway one that flushes every commit, removed when the
//! benchmark ends.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::report::{ratio, settle_bin, waits_line};

use settle_testkit::testing as cluster;

/// The service's write path, per operation, as pgbench runs it: the
/// project's script, so the benchmark and a hand run measure the same.
const WRITE_PATH: &str = include_str!("../../scripts/pg-service-write.sql");

/// Clients and seconds per pgbench run.
const CLIENTS: &str = "16";
const SECONDS: &str = "10";

/// pgbench's transactions per second for the write path on `address`, and
/// how many it processed.
fn pgbench(address: &str, script: &Path) -> Result<(f64, i64), String> {
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
    let field = |prefix: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(prefix)
                .and_then(|rest| rest.split(['/', ' ']).find(|w| !w.is_empty()))
                .and_then(|v| v.parse::<f64>().ok())
        })
    };
    let tps = field("tps = ").ok_or_else(|| format!("pgbench printed no tps: {text}"))?;
    let done = field("number of transactions actually processed: ")
        .ok_or_else(|| format!("pgbench printed no count: {text}"))?;
    Ok((tps, done as i64))
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

/// A fresh database on the durable cluster loaded with `pristine`'s rows,
/// as an address.
fn loaded(pristine: &Path, hint: &str) -> Result<String, String> {
    let db = cluster::durable_database(hint)
        .ok_or("no PostgreSQL server binaries: install the postgresql package")?;
    let address = db.to_str().ok_or("address is not UTF-8")?.to_string();
    let mut c = postgres::Client::connect(&address, postgres::NoTls)
        .map_err(|e| format!("{address}: {e}"))?;
    for setting in ["fsync", "synchronous_commit"] {
        let value: String = c
            .query_one(&format!("SHOW {setting}"), &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| format!("SHOW {setting}: {e}"))?;
        if value != "on" {
            return Err(format!(
                "the cluster runs with {setting} = {value}, not a service's server"
            ));
        }
    }
    drop(c);
    crate::pg_load::load(pristine, &address)?;
    Ok(address)
}

/// One database the write path runs on: adopted or not, and which of
/// settle's indexes were dropped after adoption, to tell each one's cost.
struct Variant {
    label: &'static str,
    adopted: bool,
    without: &'static [&'static str],
}

/// Before and after adoption; with `each_index`, also after adoption less
/// each index settle keeps on a service's table.
fn variants(each_index: bool) -> Vec<Variant> {
    let mut v = vec![
        Variant {
            label: "before",
            adopted: false,
            without: &[],
        },
        Variant {
            label: "after",
            adopted: true,
            without: &[],
        },
    ];
    if each_index {
        v.push(Variant {
            label: "after, less settle_operations_queue",
            adopted: true,
            without: &["settle_operations_queue"],
        });
        v.push(Variant {
            label: "after, less settle_events_op",
            adopted: true,
            without: &["settle_events_op"],
        });
    }
    v
}

/// What the server did so far: updates of `operations` and how many were
/// HOT (no index entry written), the WAL position in bytes, and the CPU
/// ticks of the server's exited processes (the postmaster reaps every
/// backend, so its children's time holds the clients' sessions). Throughput
/// on a loaded machine swings by a third between runs; the WAL and CPU a
/// write costs do not.
#[derive(Clone, Copy)]
struct Counters {
    updates: i64,
    hot: i64,
    wal: i64,
    cpu_ticks: i64,
}

fn counters(address: &str) -> Result<Counters, String> {
    // Sessions that just ended flush their counts as they exit.
    std::thread::sleep(Duration::from_millis(300));
    let mut c = postgres::Client::connect(address, postgres::NoTls)
        .map_err(|e| format!("{address}: {e}"))?;
    let row = c
        .query_one(
            "SELECT n_tup_upd, n_tup_hot_upd,
                    pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
             FROM pg_stat_user_tables WHERE relname = 'operations'",
            &[],
        )
        .map_err(|e| format!("reading the server's counters: {e}"))?;
    Ok(Counters {
        updates: row.get(0),
        hot: row.get(1),
        wal: row.get(2),
        cpu_ticks: server_children_ticks(address)?,
    })
}

/// The postmaster's reaped children's user and system ticks, from
/// `/proc`; the postmaster's pid is the first line of `postmaster.pid` in
/// the data directory beside the cluster's socket.
fn server_children_ticks(address: &str) -> Result<i64, String> {
    let host = address
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("host="))
        .ok_or_else(|| format!("{address}: no host"))?;
    let pidfile = Path::new(host).join("data/postmaster.pid");
    let pid = std::fs::read_to_string(&pidfile)
        .map_err(|e| format!("{}: {e}", pidfile.display()))?
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command's closing parenthesis, from the state (3rd):
    // cutime is the 16th, cstime the 17th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
    };
    Ok(tick(13) + tick(14))
}

/// What one variant measured over the rounds.
#[derive(Default)]
struct Runs {
    tps: Vec<f64>,
    /// This round's throughput over the unadopted one's.
    ratios: Vec<f64>,
    hot: Vec<f64>,
    /// WAL bytes and server CPU milliseconds per operation.
    wal: Vec<f64>,
    cpu_ms: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The table lines for PostgreSQL at `n` operations; `each_index` adds a
/// line per index settle keeps on a service's table, measured without it.
pub fn measure(
    n: u64,
    pristine: &Path,
    rounds: usize,
    each_index: bool,
) -> Result<Vec<String>, String> {
    let during = during_adoption(&loaded(pristine, "tax during")?, n)?;
    let variants = variants(each_index);
    let mut addresses = Vec::new();
    for v in &variants {
        let address = loaded(pristine, &format!("tax {}", v.label))?;
        if v.adopted {
            adopt(&address)?;
            let mut c = postgres::Client::connect(&address, postgres::NoTls)
                .map_err(|e| format!("{address}: {e}"))?;
            for index in v.without {
                // Gone already where a settle keeps it elsewhere.
                c.batch_execute(&format!("DROP INDEX IF EXISTS {index}"))
                    .map_err(|e| format!("dropping {index}: {e}"))?;
            }
        }
        addresses.push(address);
    }
    let script = std::env::temp_dir().join(format!("settle-tax-{}.sql", std::process::id()));
    std::fs::write(&script, WRITE_PATH).map_err(|e| format!("{}: {e}", script.display()))?;
    let mut runs: Vec<Runs> = variants.iter().map(|_| Runs::default()).collect();
    for round in 0..rounds {
        // Each round starts with another variant, so none always runs
        // first after a pause, or last when the machine is loaded.
        let mut tps = vec![0.0; variants.len()];
        for k in 0..variants.len() {
            let i = (round + k) % variants.len();
            let was = counters(&addresses[i])?;
            let (rate, done) = pgbench(&addresses[i], &script)?;
            tps[i] = rate;
            let now = counters(&addresses[i])?;
            let share = (now.hot - was.hot) as f64 / (now.updates - was.updates).max(1) as f64;
            let per_op = |d: i64| d as f64 / done.max(1) as f64;
            let wal = per_op(now.wal - was.wal);
            // Ticks are hundredths of a second.
            let cpu_ms = per_op(now.cpu_ticks - was.cpu_ticks) * 10.0;
            eprintln!(
                "  round {round} {}: {:.0} tps, {:.0}% HOT updates, {wal:.0} WAL bytes/op, {cpu_ms:.2} server CPU ms/op",
                variants[i].label,
                tps[i],
                share * 100.0
            );
            runs[i].tps.push(tps[i]);
            runs[i].wal.push(wal);
            runs[i].cpu_ms.push(cpu_ms);
            runs[i].hot.push(share);
        }
        for (i, r) in runs.iter_mut().enumerate() {
            r.ratios.push(tps[i] / tps[0]);
        }
    }
    let _ = std::fs::remove_file(&script);
    let before = median(&runs[0].tps);
    let mut lines = vec![during];
    for (v, r) in variants.iter().zip(&runs).skip(1) {
        lines.push(format!(
            "| PostgreSQL {n} ops, pgbench write path, {CLIENTS} clients, {SECONDS} s, fsync and synchronous commit on, {} (median of {rounds}; throughput; HOT updates {:.0}% before, {:.0}% after; WAL {:.0} / {:.0} bytes and server CPU {:.2} / {:.2} ms per operation) | {before:.0} tps | {:.0} tps | {} (per round: median {:.2}x, {:.2}x-{:.2}x; WAL {}, CPU {}) |",
            v.label,
            median(&runs[0].hot) * 100.0,
            median(&r.hot) * 100.0,
            median(&runs[0].wal),
            median(&r.wal),
            median(&runs[0].cpu_ms),
            median(&r.cpu_ms),
            median(&r.tps),
            ratio(median(&r.tps), before),
            median(&r.ratios),
            r.ratios.iter().copied().fold(f64::INFINITY, f64::min),
            r.ratios.iter().copied().fold(0.0, f64::max),
            ratio(median(&r.wal), median(&runs[0].wal)),
            ratio(median(&r.cpu_ms), median(&runs[0].cpu_ms)),
        ));
    }
    Ok(lines)
}

/// One client committing an operation every 10 ms while `settle adopt`
/// runs, then as long again alone: its slowest commit, how many took over
/// 100 ms, how many failed.
fn during_adoption(address: &str, n: u64) -> Result<String, String> {
    let (took, seen) = crate::pg_service::commits_during(address, || adopt(address))?;
    let took = took?;
    let ((), alone) = crate::pg_service::commits_during(address, || std::thread::sleep(took))?;
    Ok(waits_line(
        &format!("PostgreSQL {n} ops"),
        took,
        &seen,
        &alone,
    ))
}
