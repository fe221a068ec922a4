//! Decisions and copies on a PostgreSQL ledger through the real binary and
//! a throwaway database (`kit/pg.rs`): eight processes racing for one
//! operation at one version (one wins, seven exit 4, one decision row), and
//! a ledger copied SQLite -> PostgreSQL -> SQLite with its audit trail
//! verifying at every stop.

use crate::kit::pg;

use crate::kit::*;

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

#[test]
fn a_service_database_with_integer_ids_and_text_times_copies_out_as_written() {
    let Some(db) = pg::fresh_database("cli copy tolerant") else {
        return;
    };
    // A service's own choice of types: `integer` ids, times kept as text,
    // one of them not a time at all.
    pg::connect(&db)
        .batch_execute(
            "CREATE TABLE operations (id integer PRIMARY KEY, account text NOT NULL,
                op_type text NOT NULL, idem_key text NOT NULL, fingerprint text NOT NULL,
                params text, state text NOT NULL, result_id text, max_attempts integer NOT NULL,
                deadline_at text, lease_expires_at text, key_expires_at text,
                created_at text NOT NULL, updated_at text NOT NULL, version integer NOT NULL);
             CREATE TABLE attempts (op_id integer NOT NULL, attempt integer NOT NULL,
                started_at text NOT NULL, ended_at text, outcome text NOT NULL, error text,
                response text, PRIMARY KEY (op_id, attempt));
             CREATE TABLE events (id integer PRIMARY KEY, op_id integer NOT NULL,
                attempt integer, at text NOT NULL, event text NOT NULL, detail text);
             INSERT INTO operations VALUES
                (1, 'acct', 'place_order', 'k-1', 'sha256:1', '{}', 'unknown', NULL, 3,
                 NULL, NULL, NULL, '2026-11-30 10:00:00', '2026-11-30T10:00:05Z', 2),
                (2, 'acct', 'place_order', 'k-2', 'sha256:2', NULL, 'completed', 'r-2', 3,
                 NULL, NULL, NULL, 'yesterday', '2026-11-30T11:00:00Z', 1);
             INSERT INTO attempts VALUES (1, 1, '2026-11-30 10:00:01', NULL, 'timeout',
                'read timeout\tafter 30s', NULL);
             INSERT INTO events VALUES (7, 1, 1, '2026-11-30 10:00:01', 'started', 'line\nbreak');",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_db = dir.path().join("out.db");
    let out = settle(&["copy", db.to_str().unwrap(), out_db.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(query_i64(&out_db, "SELECT count(*) FROM operations"), 2);
    let conn = rusqlite::Connection::open(&out_db).unwrap();
    let created: Vec<String> = conn
        .prepare("SELECT created_at FROM operations ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        created,
        ["2026-11-30 10:00:00", "yesterday"],
        "kept as written"
    );
    let (error, detail): (String, String) = conn
        .query_row(
            "SELECT a.error, e.detail FROM attempts a JOIN events e ON e.op_id = a.op_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (error.as_str(), detail.as_str()),
        ("read timeout\tafter 30s", "line\nbreak")
    );

    // Back into PostgreSQL's own types, the time that is not one is refused
    // by name, and nothing is written.
    let Some(native) = pg::fresh_database("cli copy native") else {
        return;
    };
    let into = settle(&["copy", out_db.to_str().unwrap(), native.to_str().unwrap()]);
    assert_eq!(code(&into), 1, "{}", stdout(&into));
    assert!(
        stderr(&into)
            .contains("operations row 2: created_at: yesterday is not what the column holds"),
        "{}",
        stderr(&into)
    );
    let copied: i64 = pg::connect(&native)
        .query_one("SELECT count(*) FROM operations", &[])
        .unwrap()
        .get(0);
    assert_eq!(copied, 0);
}
