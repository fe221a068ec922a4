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
    let (ledger, report) = time("open read-write (adopt/migrate)", || {
        Ledger::open(&path, Access::ReadWrite)
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
