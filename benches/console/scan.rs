//! A filter on a ledger nobody adopted yet: settle has no index for it, so
//! the console scans it a slice of ids at a time. Timed on a read-only
//! look at a copy of the foreign ledger, in the All view: the last typed
//! key to the newest matches of a common account, to the one match of a
//! rare key (read after almost every id), and to a scan that finds
//! nothing being done; the console's CPU over that last scan.

use std::path::Path;
use std::time::Duration;

use crate::figures::{Figure, LIMIT, fmt, fmt_opt, open_ro, settle, type_filter};
use crate::term::cpu_ticks;

/// The ids a filter's SQL gives, newest first, at most `limit`.
fn newest(ledger: &Path, condition: &str, limit: usize) -> Vec<i64> {
    let conn = open_ro(ledger);
    let sql = format!("SELECT id FROM operations WHERE {condition} ORDER BY id DESC LIMIT {limit}");
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

pub fn measure(dir: &Path, n: u64, pristine: &Path) -> Vec<Figure> {
    let mut out = Vec::new();
    let work = dir.join(format!("scan-{n}.db"));
    let _ = std::fs::remove_file(&work);
    std::fs::copy(pristine, &work).unwrap();
    let w = work.to_str().unwrap();
    let common = newest(&work, "account = 'acct-0699'", 2);
    let rare_key = format!("k-{:06}", 42);
    let rare = newest(&work, &format!("idem_key = '{rare_key}'"), 1);

    let mut t = settle(&[w, "--read-only"]);
    t.until(LIMIT, |s| s.contents().contains("operations"));
    t.key("2");
    t.settle_for(Duration::from_millis(500));
    let (first, _) = type_filter(&mut t, "account:acct-0699", &common);
    out.push(Figure {
        name: "unadopted look, /account:acct-0699: last key to its newest rows",
        value: fmt_opt(first),
        anchor: "scanned, 100,000 ids a slice".into(),
    });
    t.key("\x1b");
    t.key("\x1b");
    t.settle_for(Duration::from_millis(500));
    let ticks = cpu_ticks(t.pid);
    let (found, _) = type_filter(&mut t, &format!("key:{rare_key}"), &rare);
    let done = t
        .until(LIMIT, |s| !s.contents().contains("scanning"))
        .map(|_| ());
    let used = ticks
        .zip(cpu_ticks(t.pid))
        .map(|(a, b)| (b - a) as f64 / 100.0);
    out.push(Figure {
        name: "unadopted look, /key:k-000042 (one old match): last key to it",
        value: fmt_opt(found),
        anchor: match (done, used) {
            (Some(()), Some(cpu)) => format!("scan done; console CPU {cpu:.2} s over it"),
            _ => "scan not done".into(),
        },
    });
    t.key("\x1b");
    t.key("\x1b");
    t.settle_for(Duration::from_millis(500));
    let nothing = "key:k-none";
    t.key("/");
    let mut last = None;
    for c in nothing.chars() {
        t.settle_for(Duration::from_millis(80));
        last = Some(t.key(&c.to_string()));
    }
    let last = last.unwrap();
    let ticks = cpu_ticks(t.pid);
    let done = t
        .until(LIMIT, |s| {
            s.contents().contains("no operation matches the filter")
        })
        .map(|i| i - last);
    let used = ticks
        .zip(cpu_ticks(t.pid))
        .map(|(a, b)| (b - a) as f64 / 100.0);
    let cpu = match (done, used) {
        (Some(d), Some(cpu)) => format!(
            "console CPU {:.0} % of a core while it scans",
            cpu / d.as_secs_f64() * 100.0
        ),
        _ => String::new(),
    };
    out.push(Figure {
        name: "unadopted look, /key:k-none (no match): last key to scan done",
        value: done.map_or_else(|| format!("> {} s", LIMIT.as_secs()), fmt),
        anchor: cpu,
    });
    t.quit();
    let _ = std::fs::remove_file(&work);
    for f in &out {
        eprintln!("  {}: {}   [{}]", f.name, f.value, f.anchor);
    }
    out
}
