//! Decisions and copies on a PostgreSQL ledger through the real binary and
//! a throwaway database (`common/pg.rs`): eight processes racing for one
//! operation at one version (one wins, seven exit 4, one decision row), and
//! a ledger copied SQLite -> PostgreSQL -> SQLite with its audit trail
//! verifying at every stop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::*;

/// A PostgreSQL ledger made by `settle init`, holding one `unknown`
/// operation at version 3, written as a service would; `None` without a
/// server.
fn ledger_with_one_unknown(hint: &str) -> Option<std::path::PathBuf> {
    let db = pg::fresh_database(hint)?;
    let out = settle(&["init", db.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    pg::connect(&db)
        .batch_execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at, version)
             VALUES ('acme', 'pay', 'k-1', 'sha256:00', 'unknown', 3,
                 '2026-11-06T10:00:00Z', '2026-11-06T11:00:00Z', 3)",
        )
        .unwrap();
    Some(db)
}

#[test]
fn eight_processes_race_for_one_version_one_wins_seven_conflict() {
    let Some(db) = ledger_with_one_unknown("cli race") else {
        return;
    };
    let children: Vec<_> = (0..8)
        .map(|i| {
            bin()
                .args(["decide", db.to_str().unwrap(), "1", "--applied"])
                .args(["--result-id", "r", "--expect-version", "3", "--operator"])
                .arg(format!("op{i}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let codes: Vec<i32> = outs.iter().map(code).collect();
    let errs: Vec<String> = outs.iter().map(stderr).collect();
    assert_eq!(
        codes.iter().filter(|&&c| c == 0).count(),
        1,
        "{codes:?} {errs:#?}"
    );
    assert_eq!(
        codes.iter().filter(|&&c| c == 4).count(),
        7,
        "{codes:?} {errs:#?}"
    );
    let mut client = pg::connect(&db);
    let decisions: i64 = client
        .query_one("SELECT count(*) FROM decisions", &[])
        .unwrap()
        .get(0);
    assert_eq!(decisions, 1);
    let version: i64 = client
        .query_one("SELECT version FROM operations WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 4);
}

#[test]
fn a_rule_refuses_with_exit_3_and_writes_nothing() {
    let Some(db) = ledger_with_one_unknown("cli refuse") else {
        return;
    };
    // A same-key retry with no contract saying the receiver is idempotent.
    let out = settle(&[
        "decide",
        db.to_str().unwrap(),
        "1",
        "--retry-same-key",
        "--expect-version",
        "3",
        "--operator",
        "ana",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    let decisions: i64 = pg::connect(&db)
        .query_one("SELECT count(*) FROM decisions", &[])
        .unwrap()
        .get(0);
    assert_eq!(decisions, 0);
}

#[test]
fn a_ledger_copied_to_postgres_and_back_verifies_at_every_stop() {
    let Some(db) = pg::fresh_database("cli copy") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let lite = demo_ledger(dir.path());
    let back = dir.path().join("back.db");
    let verified = |ledger: &str| {
        let out = settle(&["audit", ledger, "--verify"]);
        assert_eq!(code(&out), 0, "{ledger}: {}", stderr(&out));
        stdout(&out)
    };
    let source_chain = verified(lite.to_str().unwrap());
    // With a password in the address: it must never be printed.
    let address = format!("{} password=s3cret", db.display());
    let there = settle(&["copy", lite.to_str().unwrap(), &address]);
    assert_eq!(code(&there), 0, "{}", stderr(&there));
    assert!(!stdout(&there).contains("s3cret") && !stderr(&there).contains("s3cret"));
    assert!(stdout(&there).contains("operations"), "{}", stdout(&there));
    assert_eq!(verified(db.to_str().unwrap()), source_chain);
    // A second copy into it is refused: it holds operations now.
    let again = settle(&["copy", lite.to_str().unwrap(), db.to_str().unwrap()]);
    assert_eq!(code(&again), 1);
    assert!(
        stderr(&again).contains("is not empty"),
        "{}",
        stderr(&again)
    );
    let home = settle(&["copy", db.to_str().unwrap(), back.to_str().unwrap()]);
    assert_eq!(code(&home), 0, "{}", stderr(&home));
    assert_eq!(
        stdout(&home).lines().take(6).collect::<Vec<_>>(),
        stdout(&there).lines().take(6).collect::<Vec<_>>()
    );
    assert_eq!(verified(back.to_str().unwrap()), source_chain);
    assert_eq!(dump(&back), dump(&lite), "every row came back as it left");
}

#[test]
fn the_demo_runs_on_a_postgres_ledger() {
    let Some(db) = pg::fresh_database("cli demo") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = settle(&[
        "demo",
        dir.path().join("demo").to_str().unwrap(),
        "--no-console",
        "--ledger",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("The triage queue"),
        "{}",
        stdout(&out)
    );
    let verify = settle(&["audit", db.to_str().unwrap(), "--verify"]);
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
    assert!(
        stdout(&verify).starts_with("chain intact: 1 decision"),
        "{}",
        stdout(&verify)
    );
}
