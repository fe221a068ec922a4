//! Times the store reads the console and the CLI make, on a ledger given on
//! the command line: `cargo run --release --example store_timings -- big.db`.
//! Opens it writable first (adoption/migration is timed), then each read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use settle::query::Query;
use settle::store::{Access, Ledger, Seek};

fn time<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!(
        "{label:<40} {:>10.2} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: store_timings LEDGER")?,
    );
    let now = chrono::Utc::now();
    let mut step_start = Instant::now();
    let mut step_name = String::new();
    let (ledger, report) = time("open read-write (adopt/migrate)", || {
        Ledger::open_with_progress(&path, Access::ReadWrite, &mut |p| {
            if !step_name.is_empty() {
                println!(
                    "  {step_name:<38} {:>10.2} ms",
                    step_start.elapsed().as_secs_f64() * 1000.0
                );
            }
            step_name = format!("[{}/{}] {}", p.done, p.total, p.step);
            step_start = Instant::now();
        })
    })?;
    if let Some(line) = report.upgraded {
        println!("  {line}");
    }
    time("state_counts", || ledger.state_counts(now))?;
    let queue = Query::queue();
    let first = time("queue page First (100)", || {
        ledger.page(&queue, Seek::First, 100, now)
    })?;
    let last = time("queue page Last (100)", || {
        ledger.page(&queue, Seek::Last, 100, now)
    })?;
    if let (Some(a), Some(b)) = (first.last(), last.first()) {
        let mid = settle::domain::OperationId((a.id.0 + b.id.0) / 2);
        time("queue page After(mid)", || {
            ledger.page(&queue, Seek::After(mid), 100, now)
        })?;
        time("queue page Before(mid)", || {
            ledger.page(&queue, Seek::Before(mid), 100, now)
        })?;
    }
    for filter in [
        "state:exhausted",
        "state:unknown,conflict",
        "account:acct-0042",
        "type:refund",
        "key:k-00999*",
        "attempts>2",
        "err:timeout",
        "acct-004",
        "acct-0042 state:unknown",
    ] {
        let q = Query::parse(filter)?;
        time(&format!("page First {filter:?}"), || {
            ledger.page(&q, Seek::First, 100, now)
        })?;
    }
    let q = Query::queue();
    let n = time("whole queue streamed as JSON lines", || {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create("/dev/null").unwrap());
        ledger
            .for_each_row(&q, now, |r| {
                let line = serde_json::json!({
                    "id": r.id.0, "state": r.state.as_str(), "account": r.account,
                    "op_type": r.op_type, "idem_key": r.idem_key, "attempts": r.attempts,
                    "max_attempts": r.max_attempts, "last_event": r.last_event,
                    "last_error": r.last_error, "result_id": r.result_id,
                    "lease_expires_at": r.lease_expires_at, "created_at": r.created_at,
                    "updated_at": r.updated_at, "version": r.version,
                });
                writeln!(out, "{line}").unwrap();
                Ok(())
            })
            .unwrap()
    });
    println!("  {n} rows");
    let n = time("whole queue, pages of 1000", || {
        let mut seek = Seek::First;
        let mut n = 0;
        loop {
            let rows = ledger.page(&q, seek, 1000, now).unwrap();
            n += rows.len();
            match rows.last() {
                Some(r) if rows.len() == 1000 => seek = Seek::After(r.id),
                _ => break n,
            }
        }
    });
    println!("  {n} rows");
    Ok(())
}
