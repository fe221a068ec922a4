//! settle on a job queue's own database, end to end: the real binary on a
//! throwaway cluster holding Procrastinate's or River's schema
//! (`tests/fixtures/jobqueue/`) and one job in each state. `list` and
//! `show` read the engine's tables in place, a decision is refused with
//! nothing written, and the console says which engine it reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/pg.rs"]
mod pg;
#[path = "common/pty.rs"]
mod pty;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use pty::Screen;

const PROCRASTINATE: [&str; 2] = [
    include_str!("fixtures/jobqueue/procrastinate.sql"),
    include_str!("fixtures/jobqueue/procrastinate-jobs.sql"),
];
const RIVER: [&str; 2] = [
    include_str!("fixtures/jobqueue/river.sql"),
    include_str!("fixtures/jobqueue/river-jobs.sql"),
];

fn engine(hint: &str, sql: [&str; 2]) -> Option<PathBuf> {
    let db = pg::fresh_database(hint)?;
    let mut client = pg::connect(&db);
    for script in sql {
        client.batch_execute(script).unwrap();
    }
    Some(db)
}

/// What `settle list --format jsonl` printed: one object per line.
fn listed(db: &std::path::Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["list", db.to_str().unwrap(), "--format", "jsonl", "--all"];
    args.extend_from_slice(extra);
    let out = settle(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn list_and_show_read_procrastinate_in_place() {
    let Some(db) = engine("cli procrastinate", PROCRASTINATE) else {
        return;
    };
    let queue = listed(&db, &["--queue"]);
    let ids: Vec<i64> = queue.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 1], "{queue:?}");
    assert_eq!(queue[1]["state"], "exhausted");
    assert_eq!(queue[1]["idem_key"], "charge-1");

    let shown = settle(&["show", db.to_str().unwrap(), "payments/charge/charge-1"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let text = stdout(&shown);
    for word in ["exhausted", "deferred_for_retry", "payments", "charge"] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
}

#[test]
fn a_decision_on_a_job_queue_is_refused_and_writes_nothing() {
    let Some(db) = engine("cli refusal", PROCRASTINATE) else {
        return;
    };
    let before = pg::connect(&db)
        .query_one("SELECT count(*) FROM procrastinate_events", &[])
        .unwrap()
        .get::<_, i64>(0);
    let out = settle(&[
        "decide",
        db.to_str().unwrap(),
        "1",
        "--applied",
        "--result-id",
        "ch_1",
        "--evidence",
        "seen at the bank",
        "--operator",
        "ann",
    ]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out)
            .contains("settle cannot decide on Procrastinate jobs yet; nothing was written"),
        "{}",
        stderr(&out)
    );
    let mut client = pg::connect(&db);
    let after: i64 = client
        .query_one("SELECT count(*) FROM procrastinate_events", &[])
        .unwrap()
        .get(0);
    let status: String = client
        .query_one(
            "SELECT status::text FROM procrastinate_jobs WHERE id = 1",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!((after, status.as_str()), (before, "failed"));
}

#[test]
fn list_reads_river_in_place() {
    let Some(db) = engine("cli river", RIVER) else {
        return;
    };
    let queue = listed(&db, &["--queue"]);
    let ids: Vec<i64> = queue.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 1], "{queue:?}");
    assert_eq!(queue[1]["last_error"], "timeout after 30s");
}

#[test]
fn the_console_says_which_engine_it_reads() {
    let Some(db) = engine("console procrastinate", PROCRASTINATE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut screen = Screen::console(&db, dir.path(), &[], (120, 32));
    let shown = screen.wait_for("charge-1", Duration::from_secs(20));
    for seen in [
        "(Procrastinate)",
        "reserved (stale)",
        "read-only: Procrastinate's jobs, read in place",
    ] {
        assert!(shown.contains(seen), "{seen} missing from:\n{shown}");
    }
    screen.send("q");
    assert!(screen.wait_exit(Duration::from_secs(20)));
}
