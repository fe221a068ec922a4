//! The console benchmark, as a user sees it: foreign ledgers of 1M and 10M
//! operations, the real release `settle` in a pseudo-terminal, timed until
//! the expected rows are on the screen (read back through vt100), each figure
//! beside its floor (a bare rusqlite + ratatui program, `floor.rs`) or anchor
//! (the same SQL alone, or the `sqlite3` shell) and its target.
//! Prints numbers; never asserts on time. Drives settle only through its
//! binary and CLI, so it survives refactors of the library.
//!
//! `cargo bench --bench console -- --ops 1000000,10000000`
//! (`--generate-only` builds the cached ledgers and stops; `--pg` adds the
//! PostgreSQL figures, `--pg-only` measures only those; `--scan-only` the
//! unadopted look's scans alone, `--no-scan` everything but those. `SETTLE_BENCH_BIN=PATH`
//! measures another build of settle on the same ledgers;
//! `--group N` measures only a group of N copies beside one of them;
//! `SETTLE_BENCH_HOLD=FILE` keeps the PostgreSQL cluster up after its
//! figures while FILE exists; `SETTLE_BENCH_SERVICE=LEDGER` measures only
//! the console's CPU while a service commits, on an adopted ledger.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod clusters;
mod figures;
mod floor;
mod foreign;
mod group;
mod pg;
mod pg_load;
mod pg_service;
mod scan;
mod screen;
mod term;

use std::path::PathBuf;

struct Args {
    ops: Vec<u64>,
    generate_only: bool,
    floor: Option<PathBuf>,
    sqlite: bool,
    postgres: bool,
    /// Only the scans of an unadopted look (`--scan-only`).
    scan_only: bool,
    /// Only the Clusters view, on an adopted copy (`--clusters-only`).
    clusters_only: bool,
    /// Without the scans of an unadopted look (`--no-scan`).
    no_scan: bool,
    /// Only a group of this many copies beside one (`--group N`).
    group: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        ops: vec![1_000_000, 10_000_000],
        generate_only: false,
        floor: None,
        sqlite: true,
        postgres: false,
        scan_only: false,
        clusters_only: false,
        no_scan: false,
        group: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ops" => {
                let v = it
                    .next()
                    .ok_or("--ops needs a list, e.g. 1000000,10000000")?;
                args.ops = v
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--ops {v}: {e}"))?;
            }
            "--generate-only" => args.generate_only = true,
            "--scan-only" => args.scan_only = true,
            "--clusters-only" => args.clusters_only = true,
            "--no-scan" => args.no_scan = true,
            "--group" => {
                let v = it
                    .next()
                    .ok_or("--group needs a number of ledgers, e.g. 10")?;
                args.group = Some(v.parse().map_err(|e| format!("--group {v}: {e}"))?);
            }
            "--pg" => args.postgres = true,
            "--pg-only" => {
                args.postgres = true;
                args.sqlite = false;
            }
            "--floor" => args.floor = Some(it.next().ok_or("--floor needs a ledger")?.into()),
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
            eprintln!("console bench: {e}");
            std::process::exit(2);
        }
    };
    if let Some(ledger) = args.floor {
        if let Err(e) = floor::run(&ledger) {
            eprintln!("floor: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Some(ledger) = std::env::var_os("SETTLE_BENCH_SERVICE") {
        figures::service_only(std::path::Path::new(&ledger));
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-ledgers");
    let mut ledgers = Vec::new();
    for &n in &args.ops {
        match foreign::ensure(&dir, n) {
            Ok(p) => ledgers.push((n, p)),
            Err(e) => {
                eprintln!("console bench: {e}");
                std::process::exit(1);
            }
        }
    }
    if args.generate_only {
        return;
    }
    if let Some(members) = args.group {
        for (n, pristine) in &ledgers {
            group::measure(&dir, *n, pristine, members);
        }
        return;
    }
    let mut columns = Vec::new();
    for (n, pristine) in &ledgers {
        let mut column = Vec::new();
        if args.clusters_only {
            eprintln!("measuring the Clusters view at {n} operations");
            columns.push((*n, clusters::measure(&dir, *n, pristine)));
            continue;
        }
        if (args.sqlite && !args.no_scan) || args.scan_only {
            eprintln!("measuring filters scanned on an unadopted look at {n} operations");
            column.extend(scan::measure(&dir, *n, pristine));
        }
        if args.sqlite && !args.scan_only {
            eprintln!("measuring {n} operations");
            column.extend(figures::measure(&dir, *n, pristine));
        }
        if args.postgres && !args.scan_only {
            eprintln!("measuring {n} operations on PostgreSQL");
            match pg::measure(*n, pristine) {
                Ok(figs) => column.extend(figs),
                Err(e) => eprintln!("console bench: PostgreSQL: {e}"),
            }
        }
        columns.push((*n, column));
    }
    figures::print_table(&columns);
}
