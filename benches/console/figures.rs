//! Each figure of the console's speed targets, measured on one ledger size,
//! and the table that prints them beside their floor or anchor and the
//! target. The expected rows come from plain SQL on the same file (untimed,
//! or timed as the anchor); settle itself is only ever run as a process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::floor::QUEUE_WHERE;
use crate::foreign;
use crate::screen::{header_count, prompt, row_ids, selected_id, shows};
use crate::term::{Term, cpu_percent, cpu_percent_text, rss_mib};

/// A figure that takes longer than this is reported as "> 60 s".
pub(crate) const LIMIT: Duration = Duration::from_secs(60);
/// Adoption builds indexes over the whole ledger: minutes at 10M.
const ADOPTION_LIMIT: Duration = Duration::from_secs(900);
/// Time between typed keys: a fast typist.
const TYPING: Duration = Duration::from_millis(80);
/// The settle binary measured: this build's, or the one `SETTLE_BENCH_BIN`
/// names, so two builds can be measured on the same ledgers in one sitting.
pub(crate) fn settle_bin() -> std::path::PathBuf {
    std::env::var_os("SETTLE_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_settle").into())
}

/// One printed line: the figure, what settle did, the floor or anchor.
pub struct Figure {
    pub name: &'static str,
    pub value: String,
    pub anchor: String,
}

/// The issue's targets, by figure.
const TARGETS: &[(&str, &str)] = &[
    (
        "start to first frame with Queue rows",
        "<= 3x floor; 10M <= 1.5x 1M",
    ),
    ("header counts visible", "off the first frame's path"),
    ("typing /account:acct-0042: last key to rows", "<= 50 ms"),
    (
        "typing /err:timeout: last key to rows",
        "<= 200 ms (1M), 500 ms (10M)",
    ),
    ("typing /key:k-0099*: last key to rows", "<= 50 ms"),
    (
        "typing /err:quasar (3 of the oldest in the queue): last key to rows",
        "<= 100 ms",
    ),
    ("longest unanswered key while typing", "<= 100 ms"),
    (
        "page down that loads the next page (max / median of 8)",
        "<= 5 ms",
    ),
    ("G / g", "<= 5 ms"),
    ("switch views: 2 / 1", "<= 5 ms"),
    (
        "Clusters view: first frame / the queue grouped",
        "first frame <= 50 ms; grouping off the screen's thread",
    ),
    (
        "Clusters view: keys (1 while grouping / j among groups, median / max)",
        "<= 50 ms a key",
    ),
    (
        "select all matching (*, n): every row judged",
        "issue 12: printed, no target",
    ),
    ("detail of an operation with 1,000 events", "<= 20 ms"),
    (
        "first open of a foreign ledger (adoption)",
        "progress; read-only look meanwhile",
    ),
    (
        "resident memory, first frame / filtering",
        "<= 50 MB; +10 MB at 10M",
    ),
    ("idle CPU, nobody writing", "~0 %"),
    ("j on a quiet ledger (median / max of up to 10)", "<= 50 ms"),
    (
        "service commits every 10 ms: CPU / j (median / max)",
        "<= 20 % / 50 ms",
    ),
    (
        "settle list --queue --all --format jsonl: first line / all",
        "<= 2x sqlite3 -json",
    ),
    (
        "decision commit p99 (settle decide, whole process)",
        "<= 20 ms",
    ),
    ("render one frame at 200x60", "<= 2x floor"),
];

pub fn fmt(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1e3)
    }
}

pub(crate) fn fmt_opt(d: Option<Duration>) -> String {
    d.map(fmt)
        .unwrap_or_else(|| format!("> {} s", LIMIT.as_secs()))
}

/// The 99th percentile of `v` (sorted in place), None when empty.
pub(crate) fn p99(v: &mut [Duration]) -> Option<Duration> {
    v.sort();
    v.get((v.len() * 99 / 100).min(v.len().saturating_sub(1)))
        .copied()
}

/// The wall times of `command(id)` for up to `n` of `ids`, those that
/// succeeded; within [`LIMIT`] in all, so a slow commit cannot hold the run
/// for `n` x 60 s.
pub(crate) fn timed_runs(
    ids: &[i64],
    n: usize,
    mut command: impl FnMut(i64) -> Command,
) -> Vec<Duration> {
    let began = Instant::now();
    let mut times = Vec::new();
    for &id in ids.iter().take(n) {
        if began.elapsed() > LIMIT {
            break;
        }
        if let Some((d, true)) = run_timed(&mut command(id)) {
            times.push(d);
        }
    }
    times
}

/// `settle decide LEDGER ID --applied`: one decision, the whole process.
pub(crate) fn decide_command(ledger: &str, id: i64) -> Command {
    let mut cmd = Command::new(settle_bin());
    cmd.args([
        "decide",
        ledger,
        &id.to_string(),
        "--applied",
        "--result-id",
    ])
    .arg(format!("bench-{id}"))
    .args(["--operator", "bench"]);
    cmd
}

pub(crate) fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn mib(v: Option<f64>) -> String {
    v.map(|m| format!("{m:.0} MB"))
        .unwrap_or_else(|| "n/a".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|p| format!("{p:.1} %"))
        .unwrap_or_else(|| "n/a".into())
}

pub(crate) fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    foreign::rfc3339(secs)
}

/// The queue's rows under an extra condition, newest first, as the issue's
/// floor reads them (rowid walk); the elapsed time is the anchor.
pub(crate) fn queue_where(conn: &Connection, extra: &str, limit: usize) -> (Vec<i64>, Duration) {
    let sql = format!(
        "SELECT id FROM operations WHERE {QUEUE_WHERE} {extra} ORDER BY id DESC LIMIT {limit}"
    );
    let start = Instant::now();
    let ids = conn
        .prepare(&sql)
        .and_then(|mut s| {
            s.query_map([now_rfc3339()], |r| r.get(0))?
                .collect::<Result<Vec<i64>, _>>()
        })
        .unwrap_or_default();
    (ids, start.elapsed())
}

/// The service's own words for three of the oldest operations in the
/// queue: an error no other attempt has, which a walk from the newest
/// would reach last, so its figure is the text index's.
fn plant_rare_errors(work: &Path) {
    let conn = Connection::open(work).unwrap();
    conn.execute(
        &format!(
            "UPDATE attempts SET error = 'quasar meltdown in the upstream ledger'
             WHERE rowid IN (SELECT a.rowid FROM attempts a
                 WHERE a.op_id IN (SELECT id FROM operations WHERE {QUEUE_WHERE} ORDER BY id LIMIT 3))"
        ),
        [now_rfc3339()],
    )
    .unwrap();
}

pub(crate) fn open_ro(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Wall time of a process, or None past the limit.
pub(crate) fn run_timed(cmd: &mut Command) -> Option<(Duration, bool)> {
    run_timed_within(cmd, LIMIT)
}

/// [`run_timed`] with its own limit: a whole process at 10M may rightly
/// take longer than a key may.
pub(crate) fn run_timed_within(cmd: &mut Command, limit: Duration) -> Option<(Duration, bool)> {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some((start.elapsed(), status.success()));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Time to the first line and to the end of a command's stdout.
pub(crate) fn stream_timed(cmd: &mut Command) -> (Option<Duration>, Option<Duration>) {
    stream_timed_within(cmd, LIMIT)
}

/// [`stream_timed`] with its own limit.
pub(crate) fn stream_timed_within(
    cmd: &mut Command,
    limit: Duration,
) -> (Option<Duration>, Option<Duration>) {
    let start = Instant::now();
    let Ok(mut child) = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn() else {
        return (None, None);
    };
    let stdout = child.stdout.take();
    let pid = child.id();
    // A watchdog: the reader below blocks, so the limit is enforced apart.
    let done = Arc::new(AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        std::thread::spawn(move || {
            while start.elapsed() < limit && !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !done.load(Ordering::Relaxed) {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        })
    };
    let mut first = None;
    if let Some(out) = stdout {
        let mut r = BufReader::with_capacity(1 << 20, out);
        let mut line = Vec::new();
        while r
            .read_until(b'\n', &mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            first.get_or_insert_with(|| start.elapsed());
            line.clear();
        }
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    let all = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = watch.join();
    (first, (ok && all <= limit).then_some(all))
}

pub(crate) struct Expect {
    pub n: i64,
    pub queue: Vec<i64>,
    pub oldest_queue: i64,
    pub unknown: u64,
    /// Rows in the triage queue.
    pub queue_total: i64,
}

pub(crate) fn settle(args: &[&str]) -> Term {
    Term::spawn(&settle_bin(), args)
}

impl Expect {
    /// What a figure that only looks for the queue's first page expects.
    pub(crate) fn queue_only(n: u64, queue: Vec<i64>) -> Expect {
        Expect {
            n: n as i64,
            queue,
            oldest_queue: 0,
            unknown: 0,
            queue_total: 0,
        }
    }
}

/// Starts settle on `work` and waits for the queue and its counts; the
/// time to rows and to counts, or None past the limit.
pub(crate) fn start_console(work: &str, e: &Expect) -> (Term, Option<Duration>, Option<Duration>) {
    let mut t = settle(&[work]);
    let rows = t
        .until(LIMIT, |s| shows(s, &e.queue))
        .map(|i| i - t.started);
    let counts = t
        .until(LIMIT, |s| header_count(s, "unknown") == Some(e.unknown))
        .map(|i| i - t.started);
    (t, rows, counts)
}

/// Presses `key` and times until `pred` holds.
pub(crate) fn press(
    t: &mut Term,
    key: &str,
    pred: impl FnMut(&vt100::Screen) -> bool,
) -> Option<Duration> {
    let sent = t.key(key);
    t.until(LIMIT, pred).map(|i| i - sent)
}

/// `j` ten times (or as many as fit in the limit), each timed until the
/// highlight moves.
fn j_latencies(t: &mut Term) -> Option<(Duration, Duration)> {
    let mut v = Vec::new();
    let began = Instant::now();
    for _ in 0..10 {
        if began.elapsed() > LIMIT {
            break;
        }
        let before = selected_id(t.screen())?;
        let d = press(t, "j", |s| selected_id(s).is_some_and(|id| id != before))?;
        v.push(d);
        t.settle_for(Duration::from_millis(100));
    }
    Some((median(&v), *v.iter().max()?))
}

/// Typing a filter: the time from the last key to the expected rows, and the
/// longest time a key waited to be echoed in the prompt.
pub(crate) fn type_filter(
    t: &mut Term,
    text: &str,
    expected: &[i64],
) -> (Option<Duration>, Option<Duration>) {
    let keys: Vec<char> = std::iter::once('/').chain(text.chars()).collect();
    let mut sent: Vec<Instant> = Vec::new();
    let mut seen: Vec<Option<Instant>> = vec![None; keys.len()];
    let start = Instant::now();
    loop {
        let now = Instant::now();
        if sent.len() < keys.len() && now >= start + TYPING * sent.len() as u32 {
            sent.push(t.key(&keys[sent.len()].to_string()));
        }
        // A prompt holding the first k typed characters answers keys 0..=k.
        if let Some(p) = prompt(t.screen()) {
            let k = text
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .take_while(|&end| p.starts_with(&text[..end]))
                .count()
                .min(sent.len().saturating_sub(1));
            for s in seen.iter_mut().take(k + 1) {
                s.get_or_insert(now);
            }
        }
        if sent.len() == keys.len() {
            let last = sent[keys.len() - 1];
            if seen.iter().all(Option::is_some) && shows(t.screen(), expected) {
                let gap = sent
                    .iter()
                    .zip(&seen)
                    .filter_map(|(a, b)| b.map(|b| b - *a))
                    .max();
                return (Some(now - last), gap);
            }
            if now - last > LIMIT {
                let gap = seen.iter().all(Option::is_some).then(|| {
                    sent.iter()
                        .zip(&seen)
                        .filter_map(|(a, b)| b.map(|b| b - *a))
                        .max()
                        .unwrap_or_default()
                });
                return (None, gap);
            }
        }
        t.settle_for(Duration::from_millis(1));
    }
}

/// A service writing with its own connection: one operation, one attempt
/// and two events per transaction, every 10 ms, until told to stop.
fn service_writer(path: PathBuf, stop: Arc<AtomicBool>, commits: Arc<AtomicU64>) {
    let Ok(conn) = Connection::open(&path) else {
        return;
    };
    let _ = conn.busy_timeout(Duration::from_secs(5));
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let at = now_rfc3339();
        let ok = conn
            .execute_batch("BEGIN IMMEDIATE")
            .and_then(|()| {
                conn.execute(
                    "INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state, \
                     result_id, max_attempts, created_at, updated_at, version) \
                     VALUES ('acct-0001', 'place_order', ?1, 'sha256:00', NULL, 'completed', ?1, 3, ?2, ?2, 2)",
                    rusqlite::params![format!("k-writer-{seq}"), at],
                )?;
                let id = conn.last_insert_rowid();
                conn.execute(
                    "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome) VALUES (?1, 1, ?2, ?2, 'success')",
                    rusqlite::params![id, at],
                )?;
                conn.execute(
                    "INSERT INTO events (op_id, attempt, at, event) VALUES (?1, NULL, ?2, 'reserved'), (?1, 1, ?2, 'success')",
                    rusqlite::params![id, at],
                )?;
                conn.execute_batch("COMMIT")
            })
            .is_ok();
        if ok {
            commits.fetch_add(1, Ordering::Relaxed);
        } else {
            let _ = conn.execute_batch("ROLLBACK");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sqlite3_available() -> bool {
    Command::new("sqlite3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// settle's adoption DDL (docs/ledger-v1.md, "What settle adds"), for the
/// sqlite3 anchor; rolled back so the file stays unadopted.
const ADOPTION_DDL: &str = "BEGIN;
CREATE TABLE decisions (id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, decision TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL, result_id TEXT, evidence TEXT, note TEXT, operator TEXT NOT NULL, decided_at TEXT NOT NULL, op_version INTEGER NOT NULL, undoes INTEGER, extra_attempt INTEGER NOT NULL DEFAULT 0);
CREATE TABLE retry_requests (id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, idem_key TEXT NOT NULL, requested_at TEXT NOT NULL, requested_by TEXT NOT NULL, status TEXT NOT NULL, decision_id INTEGER NOT NULL);
CREATE TABLE op_types (op_type TEXT PRIMARY KEY, idempotent INTEGER NOT NULL, key_retention_s INTEGER, description TEXT);
CREATE INDEX settle_operations_state ON operations (state, id);
CREATE INDEX settle_events_op ON events (op_id, id);
ROLLBACK;";

/// The query `settle list --queue --all --format jsonl` answers, in SQL.
pub(crate) fn list_sql() -> String {
    format!(
        "SELECT o.id, o.state, o.account, o.op_type, o.idem_key, \
         (SELECT count(*) FROM attempts a WHERE a.op_id = o.id) AS attempts, o.max_attempts, \
         (SELECT event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1) AS last_event, \
         (SELECT error FROM attempts a WHERE a.op_id = o.id ORDER BY attempt DESC LIMIT 1) AS last_error, \
         o.result_id, o.lease_expires_at, o.created_at, o.updated_at, o.version \
         FROM operations o WHERE o.state IN ('unknown','exhausted','conflict') \
         OR (o.state = 'reserved' AND o.lease_expires_at < '{}') ORDER BY o.id DESC;",
        now_rfc3339()
    )
}

/// A figure, printed as it is measured and kept for the table.
pub(crate) fn record(out: &mut Vec<Figure>, name: &'static str, value: String, anchor: String) {
    eprintln!("  {name}: {value}   [{anchor}]");
    out.push(Figure {
        name,
        value,
        anchor,
    });
}

pub fn measure(dir: &Path, n: u64, pristine: &Path) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut fig = |name, value, anchor| crate::figures::record(&mut out, name, value, anchor);
    let work = dir.join(format!("work-{n}.db"));
    remove_ledger(&work);
    eprintln!("  copying the pristine ledger");
    std::fs::copy(pristine, &work).unwrap();
    plant_rare_errors(&work);
    let w = work.to_str().unwrap();
    let has_sqlite3 = sqlite3_available();

    // What the screen must show, read from the unadopted file.
    let conn = open_ro(&work);
    let (queue, floor_sql) = queue_where(&conn, "", 100);
    let mut e = Expect {
        n: n as i64,
        queue,
        oldest_queue: 0,
        unknown: 0,
        queue_total: 0,
    };
    drop(conn);

    // First open: adoption, timed until the queue's rows are on screen.
    let ddl = if has_sqlite3 {
        let r = run_timed(Command::new("sqlite3").arg(w).stdin_file(ADOPTION_DDL));
        format!(
            "sqlite3 building the v1 tables and two indexes: {}",
            fmt_opt(r.map(|r| r.0))
        )
    } else {
        "sqlite3 not installed".into()
    };
    {
        let mut t = settle(&[w]);
        let drawn = t
            .until(LIMIT, |s| !s.contents().trim().is_empty())
            .map(|i| i - t.started);
        let rows = t
            .until(LIMIT, |s| shows(s, &e.queue))
            .map(|i| i - t.started);
        // The console adopts behind a read-only look: the rows show first,
        // the header says "ADOPTING" until the indexes are built. Quitting
        // before that would roll the adoption back, so wait for it.
        let adopted = t
            .until(ADOPTION_LIMIT, |s| !s.contents().contains("ADOPTING"))
            .map(|i| i - t.started);
        let note = match (drawn, rows, adopted) {
            (Some(d), Some(r), Some(a)) => format!(
                "first drawn {}, rows {}, adoption done {} (read-only look meanwhile)",
                fmt(d),
                fmt(r),
                fmt(a)
            ),
            (_, Some(r), None) => {
                format!("rows {}, adoption > {} s", fmt(r), ADOPTION_LIMIT.as_secs())
            }
            _ => fmt_opt(None),
        };
        fig("first open of a foreign ledger (adoption)", note, ddl);
        t.quit();
    }
    // What adoption leaves beside the ledger: a WAL that every later first
    // open reads back (wal-index recovery), floor included. Measured once,
    // then checkpointed away so the other figures see the steady state a
    // service's own checkpoints keep a ledger in.
    let mib_of = |file: String| std::fs::metadata(file).map_or(0, |m| m.len() >> 20);
    let wal_mib = mib_of(format!("{w}-wal"));
    // The read model's own, which settle's opens read back (the floor's
    // do not): a build that left 66 MB there cost each first frame 40 ms.
    let model_wal_mib = mib_of(format!("{w}-settle-wal"));
    let floor_over_wal = {
        let me = std::env::current_exe().unwrap();
        let mut t = Term::spawn(&me, &["--floor", w]);
        let d = t
            .until(LIMIT, |s| shows(s, &e.queue))
            .map(|i| i - t.started);
        t.quit();
        d
    };
    let truncated = Connection::open(&work)
        .and_then(|c| {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .map_or_else(
            |err| format!("checkpoint failed: {err}"),
            |_| "then checkpointed (TRUNCATE)".into(),
        );
    fig(
        "WAL left by adoption: ledger's / read model's size / floor's first frame over it",
        format!(
            "{wal_mib} MB / {model_wal_mib} MB / {}",
            fmt_opt(floor_over_wal)
        ),
        truncated,
    );

    let conn = open_ro(&work);
    e.oldest_queue = conn
        .query_row(
            &format!("SELECT id FROM operations WHERE {QUEUE_WHERE} ORDER BY id LIMIT 1"),
            [now_rfc3339()],
            |r| r.get(0),
        )
        .unwrap_or(0);
    e.queue_total = conn
        .query_row(
            &format!("SELECT count(*) FROM operations WHERE {QUEUE_WHERE}"),
            [now_rfc3339()],
            |r| r.get(0),
        )
        .unwrap_or(0);
    e.unknown = conn
        .query_row(
            "SELECT count(*) FROM operations WHERE state = 'unknown'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0) as u64;
    let last = *e.queue.last().unwrap_or(&0);
    let (_, next_page_sql) = queue_where(&conn, &format!("AND id < {last}"), 100);
    let filters = [
        (
            "account:acct-0042",
            "AND account = 'acct-0042'",
            "typing /account:acct-0042: last key to rows",
        ),
        (
            "err:timeout",
            "AND EXISTS (SELECT 1 FROM attempts a WHERE a.op_id = operations.id AND a.error LIKE '%timeout%')",
            "typing /err:timeout: last key to rows",
        ),
        (
            "key:k-0099*",
            "AND idem_key GLOB 'k-0099*'",
            "typing /key:k-0099*: last key to rows",
        ),
        (
            "err:quasar",
            "AND EXISTS (SELECT 1 FROM attempts a WHERE a.op_id = operations.id AND a.error LIKE '%quasar%')",
            "typing /err:quasar (3 of the oldest in the queue): last key to rows",
        ),
    ];
    let filter_expect: Vec<(Vec<i64>, Duration)> = filters
        .iter()
        .map(|f| queue_where(&conn, f.1, 100))
        .collect();
    let decide_ids: Vec<i64> = conn
        .prepare("SELECT id FROM operations WHERE +state = 'unknown' AND id < ?1 ORDER BY id DESC LIMIT 200")
        .and_then(|mut s| s.query_map([e.n - 1000], |r| r.get(0))?.collect())
        .unwrap_or_default();
    drop(conn);

    // The floor: the bare program, same ledger, same terminal; three runs,
    // as for settle, since this machine is shared.
    let mut floor_starts = Vec::new();
    let (mut floor_rss, mut floor_cpu) = (None, None);
    for i in 0..3 {
        let me = std::env::current_exe().unwrap();
        let mut t = Term::spawn(&me, &["--floor", w]);
        floor_starts.push(
            t.until(LIMIT, |s| shows(s, &e.queue))
                .map(|i| i - t.started),
        );
        floor_rss = rss_mib(t.pid);
        if i == 2 {
            t.settle_for(Duration::from_millis(500));
            floor_cpu = cpu_percent(&mut t, Duration::from_secs(2));
        }
        t.quit();
    }

    // Startup on the adopted ledger, three times; the last session stays.
    let mut starts = Vec::new();
    let mut counts = Vec::new();
    let mut session = None;
    let mut rss_first = None;
    for i in 0..3 {
        let (t, rows, c) = start_console(w, &e);
        starts.push(rows);
        counts.push(c);
        rss_first = rss_mib(t.pid);
        if i < 2 {
            t.quit();
        } else {
            session = Some(t);
        }
    }
    let show_runs =
        |v: &[Option<Duration>]| v.iter().map(|d| fmt_opt(*d)).collect::<Vec<_>>().join(", ");
    fig(
        "start to first frame with Queue rows",
        show_runs(&starts),
        format!(
            "floor {} (queue SQL alone {})",
            show_runs(&floor_starts),
            fmt(floor_sql)
        ),
    );
    fig("header counts visible", show_runs(&counts), "—".into());
    let mut t = session.unwrap();
    t.settle_for(Duration::from_secs(1));
    let idle = cpu_percent(&mut t, Duration::from_secs(3));
    fig(
        "idle CPU, nobody writing",
        pct(idle),
        format!("floor {}", pct(floor_cpu)),
    );
    let quiet_j = j_latencies(&mut t);
    let quiet_j_text = quiet_j
        .map(|(m, x)| format!("{} / {}", fmt(m), fmt(x)))
        .unwrap_or_else(|| "n/a: no highlighted row found".into());
    fig(
        "j on a quiet ledger (median / max of up to 10)",
        quiet_j_text.clone(),
        "—".into(),
    );

    // Paging: each PageDown timed until the rows on screen change.
    let mut pages = Vec::new();
    for _ in 0..8 {
        let before = row_ids(t.screen());
        let d = press(&mut t, "\x1b[6~", |s| {
            let now = row_ids(s);
            !now.is_empty() && now != before
        });
        match d {
            Some(d) => pages.push(d),
            None => break,
        }
        t.settle_for(Duration::from_millis(100));
    }
    fig(
        "page down that loads the next page (max / median of 8)",
        if pages.len() == 8 {
            format!(
                "{} / {}",
                fmt(*pages.iter().max().unwrap()),
                fmt(median(&pages))
            )
        } else {
            fmt_opt(None)
        },
        format!("the next 100 ids in rowid order: {}", fmt(next_page_sql)),
    );
    let oldest = e.oldest_queue;
    let big_g = press(&mut t, "G", |s| row_ids(s).contains(&oldest));
    t.settle_for(Duration::from_millis(200));
    let small_g = press(&mut t, "g", |s| shows(s, &e.queue));
    fig(
        "G / g",
        format!("{} / {}", fmt_opt(big_g), fmt_opt(small_g)),
        "—".into(),
    );
    t.settle_for(Duration::from_millis(200));
    let all_top = [e.n, e.n - 1];
    let two = press(&mut t, "2", |s| shows(s, &all_top));
    t.settle_for(Duration::from_millis(200));
    let one = press(&mut t, "1", |s| shows(s, &e.queue));
    fig(
        "switch views: 2 / 1",
        format!("{} / {}", fmt_opt(two), fmt_opt(one)),
        "—".into(),
    );
    t.settle_for(Duration::from_millis(200));
    // The summary pane: the whole queue grouped, off the screen's thread.
    // Timed to the view's first frame ("grouping the queue…" or the
    // groups), then until the groups are drawn; then keys among them.
    let (clusters, keys) = crate::clusters::keys(&mut t, &e.queue);
    fig(
        "Clusters view: first frame / the queue grouped",
        clusters,
        format!(
            "the plain list: view switch above; queue of {} rows",
            e.queue_total
        ),
    );
    fig(
        "Clusters view: keys (1 while grouping / j among groups, median / max)",
        keys,
        "—".into(),
    );
    t.settle_for(Duration::from_millis(200));
    // The newest operation (first row, selected after g) has 1,000 events.
    let title = format!("#{} detail", e.n);
    let detail = press(&mut t, "\r", |s| s.contents().contains(&title));
    fig(
        "detail of an operation with 1,000 events",
        fmt_opt(detail),
        "—".into(),
    );
    let _ = press(&mut t, "\x1b", |s| !s.contents().contains(&title));
    t.settle_for(Duration::from_millis(200));

    // Filters, typed as a user types them.
    let mut gaps = Vec::new();
    let mut rss_filter: Option<f64> = None;
    for ((text, _, name), (expected, anchor)) in filters.iter().zip(&filter_expect) {
        let (rows, gap) = type_filter(&mut t, text, expected);
        if let Some(r) = rss_mib(t.pid) {
            rss_filter = Some(rss_filter.map_or(r, |m: f64| m.max(r)));
        }
        gaps.push(gap);
        fig(
            name,
            fmt_opt(rows),
            format!("the final query alone: {}", fmt(*anchor)),
        );
        let cleared = press(&mut t, "\x1b", |s| {
            shows(s, &e.queue) && prompt(s).is_none()
        });
        if rows.is_none() || cleared.is_none() {
            // A screen stuck on this filter would spoil the next figures.
            t.quit();
            t = start_console(w, &e).0;
        }
        t.settle_for(Duration::from_millis(300));
    }
    fig(
        "longest unanswered key while typing",
        gaps.iter()
            .map(|g| fmt_opt(*g))
            .collect::<Vec<_>>()
            .join(" / "),
        "per filter above".into(),
    );
    fig(
        "resident memory, first frame / filtering",
        format!("{} / {}", mib(rss_first), mib(rss_filter)),
        format!("floor {}", mib(floor_rss)),
    );

    // A service committing every 10 ms beside the console.
    let ((busy_cpu, busy_j), commits) = with_service(&work, || {
        t.settle_for(Duration::from_secs(1));
        let cpu = cpu_percent_text(&mut t, Duration::from_secs(3));
        (cpu, j_latencies(&mut t))
    });
    fig(
        "service commits every 10 ms: CPU / j (median / max)",
        format!(
            "{} / {} ({} commits)",
            busy_cpu.unwrap_or_else(|| "n/a".into()),
            busy_j
                .map(|(m, x)| format!("{} / {}", fmt(m), fmt(x)))
                .unwrap_or_else(|| "n/a: no highlighted row found".into()),
            commits
        ),
        format!("quiet ledger: {} / {}", pct(idle), quiet_j_text),
    );
    // Issue 12's select-all-matching: `*` on the whole queue, then `n`,
    // timed until the form says how many of the rows would be written
    // (every matching row streamed and judged on the reader). Last, since
    // a preview still running would hold the reader for later figures.
    let select_all = if n <= 1_000_000 {
        t.settle_for(Duration::from_millis(300));
        let selected = press(&mut t, "*", |s| s.contents().contains("selected all"));
        let judged = press(&mut t, "n", |s| s.contents().contains("would be written"));
        let _ = t.key("\x1b");
        match (selected, judged) {
            (Some(_), Some(j)) => format!("{} for {} rows", fmt(j), e.queue_total),
            _ => fmt_opt(None),
        }
    } else {
        format!(
            "n/a at this size ({} queue rows): run --ops 100000",
            e.queue_total
        )
    };
    fig(
        "select all matching (*, n): every row judged",
        select_all,
        "the plain list: page down above".into(),
    );
    t.quit();

    // The CLI beside the sqlite3 shell running the same query.
    let (first, all) = stream_timed(
        Command::new(settle_bin()).args(["list", w, "--queue", "--all", "--format", "jsonl"]),
    );
    let anchor = if has_sqlite3 {
        let (f, a) = stream_timed(Command::new("sqlite3").args(["-json", w, &list_sql()]));
        format!("sqlite3 -json: {} / {}", fmt_opt(f), fmt_opt(a))
    } else {
        "sqlite3 not installed".into()
    };
    fig(
        "settle list --queue --all --format jsonl: first line / all",
        format!("{} / {}", fmt_opt(first), fmt_opt(all)),
        anchor,
    );

    // Decisions: the whole `settle decide` process, 100 times.
    let (ours, theirs) = decide_ids.split_at(decide_ids.len() / 2);
    let mut times = timed_runs(ours, 100, |id| decide_command(w, id));
    let ours_p99 = p99(&mut times);
    let anchor = if has_sqlite3 {
        let mut shell = timed_runs(theirs, 100, |id| {
            let at = now_rfc3339();
            let sql = format!(
                "PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL; BEGIN IMMEDIATE;
                 INSERT INTO decisions (op_id, decision, from_state, to_state, result_id, operator, decided_at, op_version)
                   SELECT id, 'applied', state, 'completed', 'anchor-{id}', 'bench', '{at}', version FROM operations WHERE id = {id};
                 UPDATE operations SET state = 'completed', result_id = 'anchor-{id}', version = version + 1, updated_at = '{at}' WHERE id = {id};
                 COMMIT;"
            );
            let mut shell = Command::new("sqlite3");
            shell.arg(w).stdin_file(&sql);
            shell
        });
        format!(
            "sqlite3 shell, same transaction: {}",
            fmt_opt(p99(&mut shell))
        )
    } else {
        "sqlite3 not installed".into()
    };
    fig(
        "decision commit p99 (settle decide, whole process)",
        format!(
            "{} (median {}, {} decisions)",
            fmt_opt(ours_p99),
            fmt(median(&times)),
            times.len()
        ),
        anchor,
    );
    fig(
        "render one frame at 200x60",
        "n/a: not observable from outside the process".into(),
        "—".into(),
    );
    // The work copy is as big as the ledger; the pristine one stays cached.
    remove_ledger(&work);
    let _ = std::fs::remove_file(script_path());
    out
}

/// The ledger and what lies beside it: SQLite's files and settle's read
/// model with its own (3 GB at 10M, which a run would otherwise leave).
fn remove_ledger(path: &Path) {
    for suffix in [
        "",
        "-wal",
        "-shm",
        "-journal",
        "-settle",
        "-settle-wal",
        "-settle-shm",
        "-settle.lock",
    ] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn script_path() -> PathBuf {
    std::env::temp_dir().join(format!("settle-bench-{}.sql", std::process::id()))
}

/// Feeding a script to a command's stdin.
trait StdinFile {
    fn stdin_file(&mut self, script: &str) -> &mut Self;
}

impl StdinFile for Command {
    fn stdin_file(&mut self, script: &str) -> &mut Self {
        // Through a file, so the timed process is only the command itself.
        let path = script_path();
        let _ = std::fs::write(&path, script);
        match std::fs::File::open(&path) {
            Ok(f) => self.stdin(f),
            Err(_) => self,
        }
    }
}

pub fn print_table(columns: &[(u64, Vec<Figure>)]) {
    let label = |n: u64| {
        if n.is_multiple_of(1_000_000) {
            format!("{}M ops", n / 1_000_000)
        } else if n.is_multiple_of(1000) {
            format!("{}k ops", n / 1000)
        } else {
            format!("{n} ops")
        }
    };
    let mut head = String::from("| figure |");
    let mut rule = String::from("|---|");
    for (n, _) in columns {
        head += &format!(" {} | floor / anchor ({}) |", label(*n), label(*n));
        rule += "---|---|";
    }
    println!("{head} target |\n{rule}---|");
    // Rows in the order measured; a figure without a target still prints.
    let mut names: Vec<&str> = Vec::new();
    for f in columns.iter().flat_map(|(_, figs)| figs) {
        if !names.contains(&f.name) {
            names.push(f.name);
        }
    }
    for name in names {
        let target = TARGETS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("—", |(_, t)| *t);
        let mut line = format!("| {name} |");
        for (_, figs) in columns {
            match figs.iter().find(|f| f.name == name) {
                Some(f) => line += &format!(" {} | {} |", f.value, f.anchor),
                None => line += " n/a | |",
            }
        }
        println!("{line} {target} |");
    }
}

/// Runs `measure` while a service commits to `work` every 10 ms
/// ([`service_writer`]); what it measured, and how many commits landed.
fn with_service<R>(work: &Path, measure: impl FnOnce() -> R) -> (R, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let writer = {
        let (path, stop, commits) = (work.to_path_buf(), stop.clone(), commits.clone());
        std::thread::spawn(move || service_writer(path, stop, commits))
    };
    let measured = measure();
    stop.store(true, Ordering::Relaxed);
    let _ = writer.join();
    (measured, commits.load(Ordering::Relaxed))
}

/// `SETTLE_BENCH_SERVICE=LEDGER`: only the console's CPU while a service
/// commits every 10 ms, on an adopted ledger, twice.
pub fn service_only(work: &Path) {
    let w = work.to_str().unwrap();
    let conn = open_ro(work);
    let (queue, _) = queue_where(&conn, "", 100);
    drop(conn);
    let e = Expect::queue_only(0, queue);
    let mut t = settle(&[w]);
    let _ = t.until(LIMIT, |s| shows(s, &e.queue));
    t.settle_for(Duration::from_secs(3));
    for _ in 0..2 {
        let (busy, commits) = with_service(work, || {
            t.settle_for(Duration::from_secs(1));
            cpu_percent_text(&mut t, Duration::from_secs(3))
        });
        eprintln!(
            "  service commits: CPU {} ({commits} commits)",
            busy.unwrap_or_else(|| "n/a".into()),
        );
        t.settle_for(Duration::from_secs(2));
    }
    t.quit();
}
