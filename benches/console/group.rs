//! One incident, many ledgers, at scale (issue 37): `members` adopted
//! copies of the foreign ledger opened as one group (`settle L1 … L10`)
//! in the real binary, each figure beside the same figure of one of those
//! ledgers alone, measured in the same run: the first frame with the
//! queue's rows, `j`, a filter typed, and resident memory. The copies are
//! adopted one by one (timed once, then cached beside the pristine ledger).
//!
//! `cargo bench --bench console -- --ops 1000000 --group 10`

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::figures::press;
use crate::figures::{
    LIMIT, fmt, fmt_opt, median, open_ro, queue_where, settle, settle_bin, type_filter,
};
use crate::screen::{selected_line, shows};
use crate::term::Term;
use crate::term::rss_mib;

/// First frames timed per form (one ledger, the group), alternating.
const RUNS: usize = 5;

/// One figure: the group's, one ledger's, and the target.
struct Row {
    name: &'static str,
    group: String,
    one: String,
    target: &'static str,
}

/// The adopted copies, made (and adopted) when missing.
fn copies(dir: &Path, n: u64, pristine: &Path, members: usize) -> Vec<PathBuf> {
    (1..=members)
        .map(|k| {
            let work = dir.join(format!("group-{n}-{k}.db"));
            if !work.exists() {
                let partial = dir.join(format!("group-{n}-{k}.partial.db"));
                std::fs::copy(pristine, &partial).unwrap();
                let began = std::time::Instant::now();
                let adopted = Command::new(settle_bin())
                    .arg("adopt")
                    .arg(&partial)
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                assert!(adopted.success(), "settle adopt {}", partial.display());
                eprintln!("  adopted copy {k} in {}", fmt(began.elapsed()));
                // The read model beside it moves with it.
                for suffix in ["", "-settle"] {
                    let from = PathBuf::from(format!("{}{suffix}", partial.display()));
                    let to = PathBuf::from(format!("{}{suffix}", work.display()));
                    if from.exists() {
                        std::fs::rename(&from, &to).unwrap();
                    }
                }
                let _ = std::fs::remove_file(format!("{}-settle.lock", partial.display()));
            }
            work
        })
        .collect()
}

/// Exec to the queue's expected first rows, median of [`RUNS`].
fn first_frame(args: &[&str], expected: &[i64]) -> Option<Duration> {
    let mut took = Vec::new();
    for _ in 0..RUNS {
        let mut t = settle(args);
        let at = t.until(LIMIT, |s| shows(s, expected));
        took.push(at? - t.started);
        t.quit();
    }
    Some(median(&took))
}

/// Keys, a filter typed and memory in one session of the console.
fn session(args: &[&str], first: &[i64], filtered: &[i64]) -> [String; 4] {
    let mut t = settle(args);
    let shown = t.until(LIMIT, |s| shows(s, first)).is_some();
    t.settle_for(Duration::from_millis(500));
    let rss_first = rss_mib(t.pid);
    let j = shown
        .then(|| j_latencies(&mut t))
        .flatten()
        .map_or("n/a".into(), |(m, x)| format!("{} / {}", fmt(m), fmt(x)));
    let (typed, gap) = type_filter(&mut t, "account:acct-0042", filtered);
    t.settle_for(Duration::from_millis(500));
    let rss_filtered = rss_mib(t.pid);
    t.quit();
    let mib = |v: Option<f64>| v.map_or("n/a".into(), |m| format!("{m:.0} MB"));
    [
        j,
        fmt_opt(typed),
        fmt_opt(gap),
        format!("{} / {}", mib(rss_first), mib(rss_filtered)),
    ]
}

/// `j` ten times, each timed until the highlight moves a line.
fn j_latencies(t: &mut Term) -> Option<(Duration, Duration)> {
    let mut v = Vec::new();
    for _ in 0..10 {
        let before = selected_line(t.screen())?;
        v.push(press(t, "j", |s| {
            selected_line(s).is_some_and(|l| l != before)
        })?);
        t.settle_for(Duration::from_millis(100));
    }
    Some((median(&v), *v.iter().max()?))
}

/// Each row's first two ids as a group of identical copies lists them:
/// the same local id once per member, the last member's first.
fn in_group(ids: &[i64]) -> Vec<i64> {
    ids.first().map_or(Vec::new(), |&id| vec![id, id])
}

pub fn measure(dir: &Path, n: u64, pristine: &Path, members: usize) {
    eprintln!("measuring a group of {members} ledgers of {n} operations");
    let ledgers = copies(dir, n, pristine, members);
    let conn = open_ro(&ledgers[0]);
    let (queue, _) = queue_where(&conn, "", 100);
    let (account, _) = queue_where(&conn, "AND account = 'acct-0042'", 100);
    drop(conn);
    let one: Vec<&str> = vec![ledgers[0].to_str().unwrap()];
    let group: Vec<&str> = ledgers.iter().map(|p| p.to_str().unwrap()).collect();
    let (group_queue, group_account) = (in_group(&queue), in_group(&account));
    let mut frames = (Vec::new(), Vec::new());
    for _ in 0..2 {
        frames.0.extend(first_frame(&one, &queue));
        frames.1.extend(first_frame(&group, &group_queue));
    }
    let ratio = match (frames.0.first(), frames.1.first()) {
        (Some(_), Some(_)) => format!(
            " ({:.2}x)",
            median(&frames.1).as_secs_f64() / median(&frames.0).as_secs_f64()
        ),
        _ => String::new(),
    };
    let one_keys = session(&one, &queue, &account);
    let group_keys = session(&group, &group_queue, &group_account);
    let med = |v: &[Duration]| {
        if v.is_empty() {
            "n/a".into()
        } else {
            fmt(median(v))
        }
    };
    let mut rows = vec![Row {
        name: "start to first frame with Queue rows (median of 10)",
        group: format!("{}{ratio}", med(&frames.1)),
        one: med(&frames.0),
        target: "<= 2x one ledger",
    }];
    let names = [
        ("j (median / max of 10)", "<= 50 ms"),
        ("typing /account:acct-0042: last key to rows", "<= 50 ms"),
        ("longest unanswered key while typing", "<= 50 ms"),
        (
            "resident memory, first frame / filtered",
            "<= 2x one ledger",
        ),
    ];
    for (i, (name, target)) in names.into_iter().enumerate() {
        rows.push(Row {
            name,
            group: group_keys[i].clone(),
            one: one_keys[i].clone(),
            target,
        });
    }
    println!("\n| {n} ops | {members} ledgers | one ledger | target |\n|---|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} | {} |", r.name, r.group, r.one, r.target);
    }
}
