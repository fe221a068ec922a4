//! What settle costs the service that owns the ledger, measured from the
//! service's side in one run: its write path on a ledger before and after
//! `settle adopt`, interleaved, as a ratio; and how long its commits wait
//! while an adoption runs. SQLite at `synchronous=NORMAL` and `FULL`, and
//! PostgreSQL with 16 pgbench clients at synchronous commit. Drives settle
//! only through its release binary; prints numbers, never asserts on time.
//!
//! `cargo bench --bench tax -- --ops 3000,1000000 [--pg] [--pg-ops 100000]`
//! (`--writes N` operations per timed run, `--rounds N` interleaved rounds,
//! `--pg-each-index` also PostgreSQL adopted less each of settle's indexes,
//! `--generate-only` builds the cached ledgers and stops, `--during-only`
//! measures only the SQLite service's commits while adoption runs;
//! `SETTLE_BENCH_BIN=PATH` measures another build of settle.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../console/foreign.rs"]
#[allow(dead_code)]
mod foreign;
mod pg;
#[path = "../console/pg_load.rs"]
mod pg_load;
#[path = "../console/pg_service.rs"]
mod pg_service;
mod report;
mod sqlite;

use std::path::PathBuf;

struct Args {
    ops: Vec<u64>,
    writes: u64,
    rounds: usize,
    sqlite: bool,
    postgres: bool,
    pg_ops: u64,
    pg_each_index: bool,
    generate_only: bool,
    /// Only the service's commits while `settle adopt` runs (`--during-only`).
    during_only: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        ops: vec![3_000, 1_000_000],
        writes: 3_000,
        rounds: 5,
        sqlite: true,
        postgres: false,
        pg_ops: 100_000,
        pg_each_index: false,
        generate_only: false,
        during_only: false,
    };
    let number = |v: Option<String>, flag: &str| -> Result<u64, String> {
        let v = v.ok_or(format!("{flag} needs a number"))?;
        v.replace('_', "")
            .parse()
            .map_err(|e| format!("{flag} {v}: {e}"))
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ops" => {
                let v = it.next().ok_or("--ops needs a list, e.g. 3000,1000000")?;
                args.ops = v
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--ops {v}: {e}"))?;
            }
            "--writes" => args.writes = number(it.next(), "--writes")?,
            "--rounds" => args.rounds = number(it.next(), "--rounds")? as usize,
            "--pg" => args.postgres = true,
            "--pg-only" => {
                args.postgres = true;
                args.sqlite = false;
            }
            "--pg-ops" => args.pg_ops = number(it.next(), "--pg-ops")?,
            "--pg-each-index" => args.pg_each_index = true,
            "--generate-only" => args.generate_only = true,
            "--during-only" => args.during_only = true,
            // cargo bench passes --bench to every harness=false target.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tax bench: {e}");
            std::process::exit(2);
        }
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-ledgers");
    let mut lines = Vec::new();
    if args.sqlite {
        for &n in &args.ops {
            let pristine = match foreign::ensure(&dir, n) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("tax bench: {e}");
                    std::process::exit(1);
                }
            };
            if args.generate_only {
                continue;
            }
            eprintln!("SQLite, {n} operations");
            let measured = if args.during_only {
                sqlite::during_adoption(&dir, n, &pristine).map(|l| vec![l])
            } else {
                sqlite::measure(&dir, n, &pristine, args.writes, args.rounds)
            };
            match measured {
                Ok(l) => lines.extend(l),
                Err(e) => eprintln!("tax bench: SQLite at {n}: {e}"),
            }
        }
    }
    if args.postgres {
        eprintln!("PostgreSQL, {} operations", args.pg_ops);
        match foreign::ensure(&dir, args.pg_ops)
            .and_then(|p| pg::measure(args.pg_ops, &p, args.rounds, args.pg_each_index))
        {
            Ok(l) => lines.extend(l),
            Err(e) => eprintln!("tax bench: PostgreSQL: {e}"),
        }
    }
    println!();
    println!("| what the service did | before settle | after | ratio |");
    println!("|---|---|---|---|");
    for l in lines {
        println!("{l}");
    }
}
