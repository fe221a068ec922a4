//! `settle drill run --ledger` on a job queue's own database: the drill's
//! verdict on a Procrastinate task is recorded in settle's schema
//! (`settle.settle_drills`), not in the engine's tables, and it then
//! guards a same-key retry of that task's failed job as on a ledger of
//! settle's own. The receiver is the reference one, forgetting keys after
//! 2 s behind the 90 days the receivers file declares.

use crate::kit::jobqueue::{PROCRASTINATE, engine};
use crate::kit::pg;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::kit::*;

/// 90 days, as the receivers file declares the task's keys to live.
const NINETY_DAYS_S: i64 = 90 * 24 * 3600;

fn one(db: &Path, sql: &str) -> String {
    pg::connect(db).query_one(sql, &[]).unwrap().get(0)
}

/// The engine's rows as text, to see that the drill and the refusal left
/// them be.
fn engine_rows(db: &Path) -> String {
    one(
        db,
        "SELECT (SELECT string_agg(j::text, ';' ORDER BY j.id) FROM procrastinate_jobs j)
             || (SELECT string_agg(e::text, ';' ORDER BY e.id) FROM procrastinate_events e)",
    )
}

/// A receivers file for the task `charge`: the reference receiver keeping
/// keys 8 s but forgetting them after 2, behind a declared 90 days.
fn receivers(dir: &Path) -> std::path::PathBuf {
    let receiver_db = dir.join("receiver.db");
    let bin = env!("CARGO_BIN_EXE_settle");
    let q = |args: &[&str]| {
        let mut all = vec![bin, "receiver"];
        all.extend_from_slice(args);
        all.push("--db");
        all.push(receiver_db.to_str().unwrap());
        serde_json::to_string(&all).unwrap()
    };
    let toml = format!(
        "[receivers.charge]\nlookup = {}\nretry = {}\neffects = {}\n\
         idempotent = true\nkey_retention_s = {NINETY_DAYS_S}\n",
        q(&["lookup"]),
        q(&["retry", "--retention-s", "8", "--flaw", "forget-early"]),
        q(&["effects"]),
    );
    let file = dir.join("receivers.toml");
    std::fs::write(&file, toml).unwrap();
    file
}

#[test]
fn a_drill_run_with_a_procrastinate_ledger_records_its_verdict_in_settle_s_schema_and_guards_a_retry()
 {
    let Some(db) = engine("drill run procrastinate", PROCRASTINATE) else {
        return;
    };
    let address = db.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = receivers(dir.path());
    let file = file.to_str().unwrap();
    let out_dir = dir.path().join("out");
    let before = engine_rows(&db);

    let started = Instant::now();
    let out = bin()
        .args([
            "drill",
            "run",
            "--receivers",
            file,
            "--op-type",
            "charge",
            "--cases",
            "observed_retention",
            "--max-wait",
            "6",
            "--ledger",
            address,
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .env("SETTLE_OPERATOR", "drill-test")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        stdout(&out).contains("keys forgotten after"),
        "{}",
        stdout(&out)
    );
    let run = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("drill-results.json")).unwrap())
            .unwrap();
    assert_eq!(
        results["verdict"]["retention"]["as_declared"]["answer"], "no",
        "{:#}",
        results["verdict"]
    );

    // The verdict is settle's: one row in its schema, none in the engine's.
    assert_eq!(
        one(
            &db,
            "SELECT count(*)::text || ' ' || min(op_type) || ' ' || min(operator)
             FROM settle.settle_drills"
        ),
        "1 charge drill-test"
    );
    assert_eq!(engine_rows(&db), before, "the drill changed a job");

    // It refuses a same-key retry of the task's failed job, naming the
    // drill, though the file declares the task idempotent.
    let job = "payments/charge/charge-1";
    let retry = [
        "decide",
        address,
        job,
        "--retry-same-key",
        "--operator",
        "ann",
        "--receivers",
        file,
    ];
    let refused = settle(&retry);
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    for words in ["observed_retention", "drilled on"] {
        assert!(stderr(&refused).contains(words), "{}", stderr(&refused));
    }
    assert_eq!(engine_rows(&db), before, "a refusal changed a job");
    assert_eq!(one(&db, "SELECT count(*)::text FROM settle.decisions"), "0");

    // With an override and its note, the engine's retry queues the job.
    let mut overridden = retry.to_vec();
    overridden.extend(["--override", "--note", "the receiver's TTL was raised"]);
    let out = settle(&overridden);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        one(
            &db,
            "SELECT status::text FROM procrastinate_jobs WHERE id = 1"
        ),
        "todo"
    );
    assert_eq!(
        one(
            &db,
            "SELECT decision || ' ' || operator FROM settle.decisions WHERE op_id = 1"
        ),
        "retry_same_key ann"
    );
    let audit = settle(&["audit", address, "--verify"]);
    assert_eq!(code(&audit), 0, "{}", stderr(&audit));
}
