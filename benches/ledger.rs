//! Ledger benchmark: builds a ledger of SETTLE_BENCH_OPS operations (default
//! one million) the way a service writes it (the console benchmark's
//! generator), adopts it, and prints how long the console's reads take on it,
//! plus the real `settle list --queue` end to end. Prints numbers; asserts
//! nothing about time (machines here are shared and noisy).
//!
//! `cargo bench --bench ledger` (SETTLE_BENCH_LEDGER=path reuses a ledger).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::Utc;
use settle::domain::OperationId;
use settle::query::Query;
use settle::store::{Access, Ledger, Seek};

/// The console benchmark's foreign-ledger generator: one generator, so both
/// benchmarks measure the same kind of ledger.
#[allow(dead_code)]
#[path = "console/foreign.rs"]
mod foreign;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time<T>(label: &str, runs: usize, mut f: impl FnMut() -> T) -> T {
    let mut out = None;
    let times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            out = Some(f());
            start.elapsed()
        })
        .collect();
    let m = median(times.clone());
    let max = times.iter().max().unwrap();
    println!(
        "{label:<44} median {:>9.2} ms   max {:>9.2} ms   ({runs} runs)",
        m.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    out.unwrap()
}

fn peak_rss_kib() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
        })
        .unwrap_or_else(|| "?".to_string())
}

fn main() {
    let n: u64 = std::env::var("SETTLE_BENCH_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = match std::env::var_os("SETTLE_BENCH_LEDGER") {
        Some(p) if PathBuf::from(&p).exists() => PathBuf::from(p),
        other => {
            let path = other
                .map(PathBuf::from)
                .unwrap_or_else(|| dir.path().join("bench.db"));
            let start = Instant::now();
            foreign::generate(&path, n, foreign::SEED).unwrap();
            let adopting = Instant::now();
            Ledger::open(&path, Access::ReadWrite).unwrap();
            println!("adopted in {:.1} s", adopting.elapsed().as_secs_f64());
            println!(
                "built {n} operations in {:.1} s ({} MiB)",
                start.elapsed().as_secs_f64(),
                std::fs::metadata(&path).unwrap().len() >> 20
            );
            path
        }
    };
    let now = Utc::now();
    let (ledger, _) = time("open (read-write, already adopted)", 5, || {
        Ledger::open(&path, Access::ReadWrite).unwrap()
    });
    let queue = Query::queue();
    let first = time("queue: first page of 50", 20, || {
        ledger.page(&queue, Seek::First, 50, now).unwrap()
    });
    let middle = first.last().unwrap().id;
    time("queue: next page of 50 (keyset)", 20, || {
        ledger.page(&queue, Seek::After(middle), 50, now).unwrap()
    });
    time("queue: last page of 50 (G)", 20, || {
        ledger.page(&queue, Seek::Last, 50, now).unwrap()
    });
    time("all: first page of 50", 20, || {
        ledger
            .page(&Query::default(), Seek::First, 50, now)
            .unwrap()
    });
    time("all: page in the middle (id n/2)", 20, || {
        ledger
            .page(
                &Query::default(),
                Seek::After(OperationId(n as i64 / 2)),
                50,
                now,
            )
            .unwrap()
    });
    time("all: last page of 50", 20, || {
        ledger.page(&Query::default(), Seek::Last, 50, now).unwrap()
    });
    let f = Query::parse("type:place_order attempts>2").unwrap();
    time("filter type:place_order attempts>2, page", 5, || {
        ledger.page(&f, Seek::First, 50, now).unwrap()
    });
    let f = Query::parse("k-000999").unwrap();
    time("free text (scan), first page", 5, || {
        ledger.page(&f, Seek::First, 50, now).unwrap()
    });
    let counts = time("state counts (worker thread in the console)", 5, || {
        ledger.state_counts(now).unwrap()
    });
    println!("    total {}, queue {}", counts.total, counts.queue());
    time("count(queue)", 5, || ledger.count(&queue, now).unwrap());
    time("detail of one operation", 20, || {
        ledger.detail(first[0].id).unwrap()
    });
    println!("peak RSS of this process: {} KiB", peak_rss_kib());

    let bin = env!("CARGO_BIN_EXE_settle");
    time("settle list --queue --limit 100 (process)", 10, || {
        let out = Command::new(bin)
            .args(["list", path.to_str().unwrap(), "--queue", "--limit", "100"])
            .output()
            .unwrap();
        assert!(out.status.success());
    });
    time("settle list --queue --all --format jsonl", 3, || {
        let out = Command::new(bin)
            .args([
                "list",
                path.to_str().unwrap(),
                "--queue",
                "--all",
                "--format",
                "jsonl",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
    });
}
