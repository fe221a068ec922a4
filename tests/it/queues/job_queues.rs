//! settle on a job queue's own database, end to end: the real binary on a
//! throwaway cluster holding Procrastinate's or River's schema
//! (`tests/fixtures/jobqueue/`) and one job in each state. `list` and
//! `show` read the engine's tables in place, a decision on a Procrastinate
//! job goes through the engine's own functions and is audited in settle's
//! schema (River's through its own updates), and the console says which
//! engine it reads.

use crate::kit::jobqueue::{PROCRASTINATE, RIVER, engine};
use crate::kit::pg;
use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

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

fn one(db: &std::path::Path, sql: &str) -> String {
    pg::connect(db).query_one(sql, &[]).unwrap().get(0)
}

#[test]
fn decide_finishes_a_procrastinate_job_through_the_engine_and_audits_it() {
    let Some(db) = engine("cli decide", PROCRASTINATE) else {
        return;
    };
    let address = db.to_str().unwrap();
    let out = settle(&[
        "decide",
        address,
        "payments/charge/charge-1",
        "--applied",
        "--result-id",
        "ch_1",
        "--evidence",
        "seen at the bank",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let status = "SELECT status::text FROM procrastinate_jobs WHERE id = 1";
    assert_eq!(one(&db, status), "succeeded");
    assert_eq!(
        one(&db, "SELECT operator FROM settle.decisions WHERE op_id = 1"),
        "ann"
    );
    let verified = settle(&["audit", address, "--verify"]);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
    assert!(
        stdout(&verified).contains("chain intact: 1 decision"),
        "{}",
        stdout(&verified)
    );
    // The job left the queue; the stalled one is still in it.
    let queue = listed(&db, &["--queue"]);
    let ids: Vec<i64> = queue.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2]);

    // An old version is refused with exit 4 and writes nothing.
    let stale = settle(&[
        "decide",
        address,
        "2",
        "--not-applied",
        "--evidence",
        "never sent",
        "--expect-version",
        "1",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&stale), 4, "{}", stderr(&stale));
    assert_eq!(
        one(
            &db,
            "SELECT status::text FROM procrastinate_jobs WHERE id = 2"
        ),
        "doing"
    );
}

#[test]
fn decide_on_river_completes_the_job_with_settle_s_result_id() {
    let Some(db) = engine("cli river decide", RIVER) else {
        return;
    };
    let out = settle(&[
        "decide",
        db.to_str().unwrap(),
        "payments/charge/0102abcd",
        "--applied",
        "--result-id",
        "ch_1",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        one(
            &db,
            "SELECT state::text || ' ' || (metadata ->> 'settle_result_id') FROM river_job WHERE id = 1"
        ),
        "completed ch_1"
    );
    let verified = settle(&["audit", db.to_str().unwrap(), "--verify"]);
    assert!(
        stdout(&verified).contains("chain intact: 1 decision"),
        "{}",
        stdout(&verified)
    );
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
    for seen in ["(Procrastinate)", "reserved (stale)", "exhausted"] {
        assert!(shown.contains(seen), "{seen} missing from:\n{shown}");
    }
    screen.send("q");
    assert!(screen.wait_exit(Duration::from_secs(20)));
}

/// The engine's rows as text, to see that settle's own writes left them be.
fn procrastinate_rows(db: &std::path::Path) -> String {
    one(
        db,
        "SELECT (SELECT string_agg(j::text, ';' ORDER BY j.id) FROM procrastinate_jobs j)
             || (SELECT string_agg(e::text, ';' ORDER BY e.id) FROM procrastinate_events e)",
    )
}

#[test]
fn a_probe_of_a_procrastinate_job_is_kept_in_settle_s_schema_and_shown() {
    let Some(db) = engine("cli probe", PROCRASTINATE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("lookup.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n[ \"$SETTLE_KEY\" = charge-1 ] && echo ch_77\n",
    )
    .unwrap();
    let receivers = dir.path().join("receivers.toml");
    std::fs::write(
        &receivers,
        format!(
            "[receivers.\"*\"]\nlookup = [\"/bin/sh\", {:?}]\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let address = db.to_str().unwrap();
    let before = procrastinate_rows(&db);
    let out = settle(&[
        "probe",
        address,
        "1",
        "--receivers",
        receivers.to_str().unwrap(),
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        one(
            &db,
            "SELECT outcome || ' ' || result_id || ' ' || operator FROM settle.settle_probes
             WHERE op_id = 1"
        ),
        "found ch_77 ann"
    );
    assert_eq!(procrastinate_rows(&db), before, "a probe changes no job");
    let shown = settle(&["show", address, "1"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("found ch_77 · exit 0"),
        "{}",
        stdout(&shown)
    );
}
