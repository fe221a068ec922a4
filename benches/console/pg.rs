//! The PostgreSQL column of the console benchmark: the same foreign ledger,
//! loaded into a throwaway cluster with plain SQL as a service would have
//! written it ([`crate::pg_load`]), then the real `settle` against it, each
//! figure beside `psql` doing the same work. The cluster is the tests'
//! (`src/store/postgres/tests/testing.rs`), started with fsync on for this run so a
//! decision's commit costs what it costs in production; it is removed when
//! the benchmark ends.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::figures::{
    Expect, Figure, LIMIT, decide_command, fmt_opt, list_sql, now_rfc3339, open_ro, p99,
    queue_where, run_timed, run_timed_within, settle_bin, start_console, stream_timed_within,
    timed_runs, type_filter,
};

use settle_testkit::testing as cluster;

/// `psql` with the address's connection settings, quiet and unaligned.
fn psql(address: &str, sql: &str) -> Command {
    let mut cmd = Command::new("psql");
    cmd.args([
        "-X",
        "-q",
        "-A",
        "-t",
        "-v",
        "ON_ERROR_STOP=1",
        "-d",
        address,
        "-c",
        sql,
    ]);
    cmd
}

/// The ratio of ours to theirs, as "2.1x".
fn ratio(ours: Option<Duration>, theirs: Option<Duration>) -> String {
    match (ours, theirs) {
        (Some(a), Some(b)) if !b.is_zero() => format!("{:.1}x", a.as_secs_f64() / b.as_secs_f64()),
        _ => "n/a".into(),
    }
}

/// Measures settle on a PostgreSQL copy of `pristine` (`n` operations).
pub fn measure(n: u64, pristine: &Path) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    let mut fig = |name, value, anchor| crate::figures::record(&mut out, name, value, anchor);
    // A cluster that flushes every commit, as a service's server does:
    // ALTER SYSTEM cannot turn fsync on where the tests' cluster turned it
    // off on the server's command line.
    let db = cluster::durable_database(&format!("bench {n}"))
        .ok_or("no PostgreSQL server binaries: install the postgresql package")?;
    let address = db.to_str().ok_or("address is not UTF-8")?.to_string();
    eprintln!("  loading {n} operations into PostgreSQL with COPY");
    let secs = crate::pg_load::load(pristine, &address)?;
    eprintln!("  loaded in {secs:.0} s");

    // What the screen must show: the same rows as the SQLite ledger's.
    let conn = open_ro(pristine);
    let (queue, _) = queue_where(&conn, "", 100);
    let (by_account, _) = queue_where(&conn, "AND account = 'acct-0042'", 100);
    let decide_ids: Vec<i64> = conn
        .prepare("SELECT id FROM operations WHERE +state = 'unknown' AND id < ?1 ORDER BY id DESC LIMIT 200")
        .and_then(|mut s| s.query_map([n as i64 - 1000], |r| r.get(0))?.collect())
        .unwrap_or_default();
    drop(conn);
    let e = Expect::queue_only(n, queue);

    // Whole passes over the ledger (adoption, a whole list) take minutes
    // at 10M: a minute a million, at least the keys' limit.
    let whole = LIMIT.max(Duration::from_secs(n / 1_000_000 * 60));
    // A service commits every 10 ms meanwhile: adoption must not make it
    // wait (issue 17: never over 100 ms, no write lost).
    // The same service alone first, for about as long as adoption takes
    // (6 s a million): what this machine's disk makes a commit wait
    // anyway.
    let ((), before) = crate::pg_service::commits_during(&address, || {
        std::thread::sleep(Duration::from_secs(n / 1_000_000 * 6).max(Duration::from_secs(5)));
    })?;
    let adopting = Instant::now();
    let (adopt, service) = crate::pg_service::commits_during(&address, || {
        run_timed_within(Command::new(settle_bin()).args(["adopt", &address]), whole)
    })?;
    // And as long again after, while the server takes in what adoption
    // wrote (its checkpoint, its autovacuum of settle's new tables).
    let ((), after) = crate::pg_service::commits_during(&address, || {
        std::thread::sleep(adopting.elapsed());
    })?;
    fig(
        "PostgreSQL: settle adopt of the service's database",
        format!(
            "{} (a service committing every 10 ms meanwhile: {})",
            fmt_opt(adopt.filter(|(_, ok)| *ok).map(|(d, _)| d)),
            service.line()
        ),
        format!(
            "COPY of the service rows: {secs:.0} s; the service alone before: {}; as long after: {}",
            before.line(),
            after.line()
        ),
    );

    // The first frame with the queue's rows, three runs; the last stays.
    let mut starts = Vec::new();
    let mut session = None;
    for _ in 0..3 {
        let (t, rows, _) = start_console(&address, &e);
        starts.push(rows);
        if let Some(old) = session.replace(t) {
            old.quit();
        }
    }
    let Some(mut t) = session else {
        return Err("the console never started".into());
    };
    let first_sql = format!(
        "SELECT id FROM operations WHERE state IN ('unknown','exhausted','conflict') \
         OR (state = 'reserved' AND lease_expires_at < '{}') ORDER BY id DESC LIMIT 100",
        now_rfc3339()
    );
    let psql_first = run_timed(&mut psql(&address, &first_sql)).map(|(d, _)| d);
    let best = starts.iter().flatten().min().copied();
    fig(
        "PostgreSQL: start to first frame with Queue rows (best of 3)",
        fmt_opt(best),
        format!(
            "psql, the queue's first 100 ids: {} ({})",
            fmt_opt(psql_first),
            ratio(best, psql_first)
        ),
    );

    let (last_key, gap) = type_filter(&mut t, "account:acct-0042", &by_account);
    let psql_filter = run_timed(&mut psql(
        &address,
        &first_sql.replace("ORDER BY", "AND account = 'acct-0042' ORDER BY"),
    ))
    .map(|(d, _)| d);
    fig(
        "PostgreSQL: typing /account:acct-0042: last key to rows",
        format!("{} (longest key wait {})", fmt_opt(last_key), fmt_opt(gap)),
        format!(
            "psql, same rows: {} ({})",
            fmt_opt(psql_filter),
            ratio(last_key, psql_filter)
        ),
    );
    t.quit();

    // Decisions: the whole `settle decide` process beside psql running the
    // same transaction, 50 each.
    let (ours, theirs) = decide_ids.split_at(decide_ids.len() / 2);
    let mut times = timed_runs(ours, 50, |id| decide_command(&address, id));
    let mut shell = timed_runs(theirs, 50, |id| {
        // What settle's transaction does, less the rules and the chain:
        // the trail's lock, the row lock, a gapless id, the state change.
        let sql = format!(
            "BEGIN;
             LOCK TABLE decisions IN SHARE ROW EXCLUSIVE MODE;
             SELECT version FROM operations WHERE id = {id} FOR UPDATE;
             INSERT INTO decisions (id, op_id, decision, from_state, to_state, result_id, operator, decided_at, op_version)
               SELECT (SELECT coalesce(max(id), 0) + 1 FROM decisions), id, 'applied', state, 'completed', 'anchor-{id}', 'bench', now(), version
               FROM operations WHERE id = {id};
             UPDATE operations SET state = 'completed', result_id = 'anchor-{id}', version = version + 1, updated_at = now() WHERE id = {id};
             COMMIT;"
        );
        psql(&address, &sql)
    });
    let (ours_p99, theirs_p99) = (p99(&mut times), p99(&mut shell));
    fig(
        "PostgreSQL: settle decide, p99 of 50 processes",
        fmt_opt(ours_p99),
        format!(
            "psql, same transaction: {} ({})",
            fmt_opt(theirs_p99),
            ratio(ours_p99, theirs_p99)
        ),
    );

    // Alternating, psql first, best of two each: at 10M the ledger is
    // bigger than the cache, and whichever ran second read the pages the
    // first had just brought in.
    let settle_all = || {
        stream_timed_within(
            Command::new(settle_bin())
                .args(["list", &address, "--queue", "--all", "--format", "jsonl"]),
            whole,
        )
    };
    // The same question as settle asks: a service's events carry no index
    // by operation once adopted, so the last event comes through settle's
    // own table, as settle's statement reads it.
    let by_map = list_sql().replace(
        "(SELECT event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1)",
        "(SELECT e.event FROM events e WHERE e.id = \
         (SELECT max(m.id) FROM settle_event_ops m WHERE m.op_id = o.id))",
    );
    if by_map == list_sql() {
        return Err("the whole list's anchor no longer names its last-event subquery".into());
    }
    let psql_all = || stream_timed_within(&mut psql(&address, &by_map), whole).1;
    let p1 = psql_all();
    let (first1, all1) = settle_all();
    let p2 = psql_all();
    let (first2, all2) = settle_all();
    let best = |a: Option<Duration>, b: Option<Duration>| a.into_iter().chain(b).min();
    let (first, all, psql_all) = (best(first1, first2), best(all1, all2), best(p1, p2));
    fig(
        "PostgreSQL: settle list --queue --all --format jsonl: first line / all (best of 2, alternating)",
        format!("{} / {}", fmt_opt(first), fmt_opt(all)),
        format!(
            "psql -A -t -c, same query: {} ({})",
            fmt_opt(psql_all),
            ratio(all, psql_all)
        ),
    );
    hold(&address);
    Ok(out)
}

/// With `SETTLE_BENCH_HOLD=FILE`, keeps the cluster (and its loaded
/// ledger) up while FILE exists, to look into a figure by hand; a 10M load
/// takes a quarter of an hour.
fn hold(address: &str) {
    let Some(file) = std::env::var_os("SETTLE_BENCH_HOLD") else {
        return;
    };
    let file = std::path::PathBuf::from(file);
    if std::fs::write(&file, format!("{address}\n")).is_err() {
        eprintln!("  SETTLE_BENCH_HOLD: cannot write {}", file.display());
        return;
    }
    eprintln!("  holding {address} until {} is removed", file.display());
    while file.exists() {
        std::thread::sleep(Duration::from_secs(5));
    }
}
