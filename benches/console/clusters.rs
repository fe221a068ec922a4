//! The Clusters view at scale, as an operator feels it: its first frame
//! apart from its grouping (which runs off the screen's thread), a key
//! pressed while it groups, and keys among its groups. `--clusters-only`
//! measures just these on an adopted copy of each ledger (adopting it
//! first, timed, when the copy is missing), so the 10M figures need not
//! wait for the whole benchmark.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::figures::{
    Expect, Figure, LIMIT, fmt, fmt_opt, median, open_ro, press, queue_where, settle, settle_bin,
};
use crate::screen::shows;
use crate::term::Term;

/// The shell's script: the indexes of settle's read model (and its index
/// of events by operation), built on the service's own tables in one
/// transaction that is rolled back, so the copy stays unadopted.
const ANCHOR: &str = "BEGIN;
CREATE INDEX anchor_state ON operations (state, id);
CREATE INDEX anchor_account ON operations (account, id);
CREATE INDEX anchor_type ON operations (op_type, id);
CREATE INDEX anchor_key ON operations (idem_key, id);
CREATE INDEX anchor_queue ON operations (id) WHERE state IN ('unknown', 'exhausted', 'conflict', 'reserved');
CREATE INDEX anchor_lease ON operations (lease_expires_at) WHERE state = 'reserved';
CREATE INDEX anchor_events ON events (op_id, id);
ROLLBACK;
";

fn write_anchor(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("clusters-anchor.sql");
    std::fs::write(&path, ANCHOR).unwrap();
    path
}

fn secs(d: Option<Duration>) -> String {
    d.map_or("n/a".into(), |c| format!("{:.1} s", c.as_secs_f64()))
}

/// CPU time (user and system) of this process's waited-for children,
/// from `/proc/self/stat` (in clock ticks of 1/100 s on Linux).
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis, from field 3 on.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The figures of the Clusters view on an adopted copy of `pristine`.
pub fn measure(dir: &Path, n: u64, pristine: &Path) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut fig = |name, value, anchor| crate::figures::record(&mut out, name, value, anchor);
    let work = dir.join(format!("clusters-{n}.db"));
    let w = work.to_str().unwrap();
    if !work.exists() {
        eprintln!("  copying the pristine ledger");
        std::fs::copy(pristine, &work).unwrap();
        // The anchor: the sqlite3 shell building the indexes the read
        // model carries, directly on the service's tables, rolled back.
        let cpu_before = children_cpu();
        let began = Instant::now();
        let shell = Command::new("sqlite3")
            .arg(w)
            .stdin(std::fs::File::open(write_anchor(dir)).unwrap())
            .stdout(Stdio::null())
            .status();
        let wall = began.elapsed();
        let cpu = children_cpu().map(|after| after - cpu_before.unwrap_or_default());
        fig(
            "sqlite3 shell: the read model's indexes on the service's tables: wall / CPU",
            match shell {
                Ok(st) if st.success() => format!("{} / {}", fmt(wall), secs(cpu)),
                _ => "sqlite3 not installed or failed".into(),
            },
            "the anchor of adoption at 10M: at most 1.5x".into(),
        );
        // Unbounded: at 10M on a loaded machine adoption takes minutes.
        let cpu_before = children_cpu();
        let began = Instant::now();
        let status = Command::new(settle_bin())
            .args(["adopt", w])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        let wall = began.elapsed();
        let cpu = children_cpu().map(|after| after - cpu_before.unwrap_or_default());
        fig(
            "settle adopt (schema and read model), whole process: wall / CPU",
            format!(
                "{}{} / {}",
                fmt(wall),
                if status.success() { "" } else { " (failed)" },
                secs(cpu)
            ),
            "—".into(),
        );
    }
    let conn = open_ro(&work);
    let (queue, _) = queue_where(&conn, "", 100);
    drop(conn);
    let e = Expect::queue_only(n, queue);
    // The rows only: the header's counts are not this figure's, and
    // waiting for them would spend the limit at 10M.
    let mut t = settle(&[w]);
    let rows = t
        .until(LIMIT, |s| shows(s, &e.queue))
        .map(|i| i - t.started);
    fig(
        "start to first frame with Queue rows",
        fmt_opt(rows),
        "—".into(),
    );
    t.settle_for(Duration::from_millis(500));
    let (clusters, keys) = keys(&mut t, &e.queue);
    fig(
        "Clusters view: first frame / the queue grouped",
        clusters,
        "—".into(),
    );
    fig(
        "Clusters view: keys (1 while grouping / j among groups, median / max)",
        keys,
        "—".into(),
    );
    t.quit();
    out
}

/// The Clusters view at scale: `5` timed to its first frame and to its
/// groups; then `1` pressed while it groups again, timed to the Queue's
/// rows; then `j` among the groups, each timed until the marker moves.
pub(crate) fn keys(t: &mut Term, queue: &[i64]) -> (String, String) {
    let grouped = |s: &vt100::Screen| {
        let text = s.contents();
        text.contains("receiver (op type)") && text.contains("age (since stuck)")
    };
    let sent = t.key("5");
    let first = t
        .until(LIMIT, |s| {
            grouped(s) || s.contents().contains("grouping the queue")
        })
        .map(|i| i - sent);
    let all = t.until(LIMIT, grouped).map(|i| i - sent);
    t.settle_for(Duration::from_millis(200));
    let _ = press(t, "1", |s| shows(s, queue));
    t.settle_for(Duration::from_millis(200));
    // Back to the Clusters view and away at once: the key that leaves
    // must not wait for the grouping it interrupts.
    let _ = press(t, "5", |s| {
        let text = s.contents();
        text.contains("grouping the queue") || text.contains("triage queue grouped")
    });
    let away = press(t, "1", |s| shows(s, queue));
    let _ = press(t, "5", grouped);
    let mut v = Vec::new();
    for _ in 0..10 {
        let Some(before) = marker_row(t.screen()) else {
            break;
        };
        let Some(d) = press(t, "j", |s| marker_row(s).is_some_and(|r| r != before)) else {
            break;
        };
        v.push(d);
        t.settle_for(Duration::from_millis(100));
    }
    let _ = press(t, "1", |s| shows(s, queue));
    t.settle_for(Duration::from_millis(200));
    let j = match (v.is_empty(), v.iter().max()) {
        (false, Some(max)) => format!("{} / {}", fmt(median(&v)), fmt(*max)),
        _ => "n/a".into(),
    };
    (
        format!("{} / {}", fmt_opt(first), fmt_opt(all)),
        format!("{} / {j}", fmt_opt(away)),
    )
}

/// The screen row of the Clusters view's selection marker.
fn marker_row(s: &vt100::Screen) -> Option<u16> {
    let (rows, cols) = s.size();
    (0..rows).find(|&r| s.contents_between(r, 0, r, cols).contains('▸'))
}
