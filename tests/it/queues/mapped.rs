//! settle on a team's own operations table, opened by the mapping the
//! operator writes: rocket-rides' `idempotency_keys`, made by its own DDL
//! (`sample-data/mapping/rocket-rides.sql`) and read through the sample
//! mapping (`sample-data/mapping/rocket-rides.toml`), rows in every
//! recovery point, some stuck. The queue is exactly the rows the mapping's
//! condition calls stuck, each decision writes what the mapping's statement
//! says and nothing else, a stale version writes nothing (exit 4), and a
//! mapping the server refuses is refused at the line it is on.

use crate::kit::pg;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::kit::*;

const DDL: &str = include_str!("../../../sample-data/mapping/rocket-rides.sql");
const MAPPING: &str = include_str!("../../../sample-data/mapping/rocket-rides.toml");
const STUCK: &str = "recovery_point <> 'finished' AND locked_at < now() - interval '90 seconds'";

/// 40 keys: recovery points in turn (every fourth finished), and locks
/// by `i % 5`: ten minutes old, just taken, none, two minutes old (twice).
/// A finished key may keep an old lock: it is not stuck.
const SEED: &str = "INSERT INTO idempotency_keys (idempotency_key, user_id, request_method,
        request_path, request_params, recovery_point, locked_at, last_run_at, created_at,
        response_code, response_body)
    SELECT 'key-' || i, 100 + i % 3, 'POST', '/rides',
        jsonb_build_object('origin_lat', i, 'target_lat', i + 1),
        (ARRAY['started', 'ride_created', 'charge_created', 'finished'])[1 + i % 4],
        CASE i % 5 WHEN 0 THEN now() - interval '10 minutes' WHEN 1 THEN now()
            WHEN 2 THEN NULL ELSE now() - interval '2 minutes' END,
        now() - interval '10 minutes', now() - interval '1 hour',
        CASE WHEN i % 4 = 3 THEN 201 END,
        CASE WHEN i % 4 = 3 THEN '{\"message\": \"Payment accepted.\"}'::jsonb END
    FROM generate_series(1, 40) i";

/// A database with rocket-rides' table and its 40 keys, and the mapping
/// file (`mapping`, the sample's text) in a directory of its own.
struct Rides {
    db: PathBuf,
    map: PathBuf,
    _dir: tempfile::TempDir,
}

fn rides(hint: &str, mapping: &str) -> Option<Rides> {
    let db = pg::fresh_database(hint)?;
    let mut client = pg::connect(&db);
    client.batch_execute(DDL).unwrap();
    client.batch_execute(SEED).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("rocket-rides.toml");
    std::fs::write(&map, mapping).unwrap();
    Some(Rides { db, map, _dir: dir })
}

impl Rides {
    /// settle on the database through the mapping, with `args` after it.
    fn settle(&self, command: &str, args: &[&str]) -> std::process::Output {
        let map = self.map.to_str().unwrap();
        let mut all = vec![command, self.db.to_str().unwrap(), "--map", map];
        all.extend_from_slice(args);
        settle(&all)
    }

    fn ok(&self, command: &str, args: &[&str]) -> String {
        let out = self.settle(command, args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
    }

    /// The list's rows, as jsonl objects.
    fn listed(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let mut all = vec!["--all", "--format", "jsonl"];
        all.extend_from_slice(args);
        self.ok("list", &all)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn queue(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .listed(&["--queue"])
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        ids.sort();
        ids
    }

    fn decide(&self, op: i64, how: &[&str]) -> std::process::Output {
        let op = op.to_string();
        let mut args = vec![op.as_str(), "--operator", "ann"];
        args.extend_from_slice(how);
        self.settle("decide", &args)
    }

    fn ids(&self, condition: &str) -> Vec<i64> {
        let sql = format!("SELECT id::bigint FROM idempotency_keys WHERE {condition} ORDER BY id");
        let rows = pg::connect(&self.db).query(&sql, &[]).unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }

    /// Every row's bytes and its `xmin`, which moves on any update.
    fn rows(&self) -> BTreeMap<i64, String> {
        let sql = "SELECT id::bigint, md5(t::text) || ' ' || xmin::text FROM idempotency_keys t";
        let rows = pg::connect(&self.db).query(sql, &[]).unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    }

    /// One row's columns as text, `|` between them.
    fn row(&self, id: i64, columns: &str) -> String {
        let sql =
            format!("SELECT concat_ws('|', {columns}) FROM idempotency_keys WHERE id = $1::bigint");
        pg::connect(&self.db)
            .query_one(&sql, &[&id])
            .unwrap()
            .get(0)
    }

    /// The columns no statement of the sample writes, as one text.
    fn kept(&self, id: i64) -> String {
        self.row(
            id,
            "id, created_at, idempotency_key, last_run_at, request_method, request_params, \
             request_path, user_id",
        )
    }

    /// settle's decisions, none where its schema is not there yet.
    fn decisions(&self) -> i64 {
        let mut client = pg::connect(&self.db);
        let there = "SELECT to_regclass('settle.decisions') IS NOT NULL";
        if !client.query_one(there, &[]).unwrap().get::<_, bool>(0) {
            return 0;
        }
        let count = "SELECT count(*) FROM settle.decisions";
        client.query_one(count, &[]).unwrap().get(0)
    }

    /// The state the list gives row `id`.
    fn state(&self, id: i64) -> String {
        let all = self.listed(&[]);
        let row = all.iter().find(|o| o["id"] == id).unwrap();
        row["state"].as_str().unwrap().to_string()
    }
}

/// Only `decided` rows differ between the two, and each of them did.
fn only_changed(
    mut before: BTreeMap<i64, String>,
    mut after: BTreeMap<i64, String>,
    decided: &[i64],
) {
    for id in decided {
        assert_ne!(before.remove(id), after.remove(id), "row {id} was decided");
    }
    assert_eq!(before, after, "a row nobody decided on changed");
}

/// The 1-based line of the file `text` that starts with `start`.
fn line_of(text: &str, start: &str) -> usize {
    text.lines().position(|l| l.starts_with(start)).unwrap() + 1
}

#[test]
fn the_stuck_rows_are_the_queue_and_each_decision_writes_what_the_mapping_says() {
    let Some(r) = rides("mapped rocket-rides", MAPPING) else {
        return;
    };
    let stuck = r.ids(STUCK);
    // 40 keys, 30 unfinished, 18 of them locked over 90 seconds ago.
    assert_eq!(stuck.len(), 18, "{stuck:?}");
    assert_eq!(r.queue(), stuck);
    let listed = r.listed(&["--queue"]);
    assert!(listed.iter().all(|o| o["state"] == "unknown"), "{listed:?}");
    assert_eq!(listed[0]["op_type"], "POST /rides");

    let columns_before: i64 = pg::connect(&r.db)
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'idempotency_keys'",
            &[],
        )
        .unwrap()
        .get(0);
    let before = r.rows();
    let (applied, not_applied, retried) = (stuck[0], stuck[1], stuck[2]);
    let kept: Vec<String> = [applied, not_applied, retried]
        .map(|id| r.kept(id))
        .to_vec();
    let recovery_point = r.row(retried, "recovery_point");

    let out = r.decide(
        applied,
        &[
            "--applied",
            "--result-id",
            "ch_1",
            "--evidence",
            "seen at Stripe",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        r.row(
            applied,
            "recovery_point, locked_at IS NULL, response_code, response_body::text"
        ),
        r#"finished|t|201|{"message": "Payment accepted. Your pilot is on their way!", "result_id": "ch_1"}"#
    );

    let out = r.decide(
        not_applied,
        &["--not-applied", "--evidence", "no charge at Stripe"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        r.row(
            not_applied,
            "recovery_point, locked_at IS NULL, response_code, response_body ->> 'error'"
        ),
        "finished|t|422|This request was not carried out. Please retry it with a new Idempotency-Key."
    );

    // Same key: the operator declares the type idempotent (Stripe dedupes
    // the charge on rocket-rides' own key); the lock goes, nothing else.
    pg::connect(&r.db)
        .execute(
            "INSERT INTO settle.op_types (op_type, idempotent) VALUES ('POST /rides', true)",
            &[],
        )
        .unwrap();
    let out = r.decide(
        retried,
        &["--retry-same-key", "--evidence", "Stripe dedupes"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        r.row(
            retried,
            "recovery_point, locked_at IS NULL, response_code IS NULL, response_body IS NULL"
        ),
        format!("{recovery_point}|t|t|t")
    );

    // Each decided row kept every column its statement does not set, and
    // no other row moved at all.
    let now: Vec<String> = [applied, not_applied, retried]
        .map(|id| r.kept(id))
        .to_vec();
    assert_eq!(kept, now);
    only_changed(before, r.rows(), &[applied, not_applied, retried]);
    assert_eq!(r.decisions(), 3);
    let verified = r.ok("audit", &["--verify"]);
    assert!(verified.contains("chain intact: 3 decisions"), "{verified}");

    // Out of the queue; each shown as the mapping reads it now.
    assert_eq!(r.queue(), stuck[3..]);
    let states = [applied, not_applied, retried].map(|id| r.state(id));
    assert_eq!(states, ["completed", "not_applied", "retry_pending"]);

    // Adoption added nothing to the team's table: its columns, no trigger.
    let mut client = pg::connect(&r.db);
    let (columns, triggers): (i64, i64) = {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM information_schema.columns
                    WHERE table_name = 'idempotency_keys'),
                    (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'idempotency_keys'::regclass)",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((columns, triggers), (columns_before, 0));
}

#[test]
fn a_stale_version_is_refused_with_exit_4_and_nothing_is_written() {
    let Some(r) = rides("mapped stale", MAPPING) else {
        return;
    };
    let stuck = r.ids(STUCK)[0];
    let seen = r.listed(&["--queue"]);
    let seen = seen.iter().find(|o| o["id"] == stuck).unwrap()["version"]
        .as_i64()
        .unwrap();
    // The service touches the row between the operator's list and decision.
    pg::connect(&r.db)
        .execute(
            "UPDATE idempotency_keys SET last_run_at = now() - interval '5 minutes' WHERE id = $1",
            &[&stuck],
        )
        .unwrap();
    let before = r.rows();
    let version = seen.to_string();
    let out = r.decide(
        stuck,
        &[
            "--applied",
            "--result-id",
            "ch_1",
            "--expect-version",
            &version,
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(r.rows(), before);
    assert_eq!(r.decisions(), 0);

    // At the version it has now, the same decision goes through.
    let now = r.listed(&["--queue"]);
    let now = now.iter().find(|o| o["id"] == stuck).unwrap()["version"].to_string();
    assert_ne!(now, version);
    let out = r.decide(
        stuck,
        &["--applied", "--result-id", "ch_1", "--expect-version", &now],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    only_changed(before, r.rows(), &[stuck]);
}

#[test]
fn a_decision_the_mapping_has_no_statement_for_is_recorded_in_settle_s_schema_only() {
    let start = MAPPING.find("applied = \"\"\"").unwrap();
    let end = start + MAPPING[start..].find("\"\"\"\n").unwrap() + 4;
    let end = end + MAPPING[end..].find("\"\"\"\n").unwrap() + 4;
    let without = format!("{}{}", &MAPPING[..start], &MAPPING[end..]);
    assert!(!without.contains("\napplied"), "{without}");
    let Some(r) = rides("mapped no statement", &without) else {
        return;
    };
    let stuck = r.ids(STUCK)[0];
    let before = r.rows();
    let out = r.decide(
        stuck,
        &[
            "--applied",
            "--result-id",
            "ch_1",
            "--evidence",
            "seen at Stripe",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("applied is recorded in settle's schema only"),
        "{}",
        stderr(&out)
    );
    assert_eq!(r.rows(), before);
    assert_eq!(r.decisions(), 1);
    let decided: String = pg::connect(&r.db)
        .query_one(
            "SELECT decision || ' ' || result_id FROM settle.decisions",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(decided, "applied ch_1");
    // The row is as it was: still stuck, for the team to finish.
    assert!(r.queue().contains(&stuck));
}

#[test]
fn a_mapping_naming_a_missing_table_or_column_is_refused_at_its_line() {
    for (from, to, said) in [
        (
            "locked = \"locked_at\"",
            "locked = \"locked_until\"",
            "column \"locked_until\" does not exist",
        ),
        (
            "table = \"idempotency_keys\"",
            "table = \"idempotency_key\"",
            "names a table",
        ),
    ] {
        let mapping = MAPPING.replace(from, to);
        let line = line_of(&mapping, to);
        let Some(r) = rides("mapped missing column", &mapping) else {
            return;
        };
        let before = r.rows();
        for command in ["list", "adopt"] {
            let out = r.settle(command, &[]);
            let err = stderr(&out);
            assert_ne!(code(&out), 0, "{err}");
            let file = r.map.display().to_string();
            assert!(err.contains(&file), "{err}");
            assert!(err.contains(&format!("line {line} ")), "{err}");
            assert!(err.contains(said), "{err}");
        }
        assert_eq!(r.rows(), before);
        let settle_schema: bool = pg::connect(&r.db)
            .query_one("SELECT to_regnamespace('settle') IS NOT NULL", &[])
            .unwrap()
            .get(0);
        assert!(!settle_schema, "adoption went ahead on a refused mapping");
    }
}

#[test]
fn a_statement_that_fails_is_refused_at_its_line_and_nothing_is_written() {
    // A typo the server refuses when the mapping is opened, and a value the
    // table's own check refuses only when the statement runs.
    let cases = [
        (
            "SET recovery_point = 'finished', locked_at = NULL, response_code = 201",
            "SET recovery_pont = 'finished', locked_at = NULL, response_code = 201",
            "column \"recovery_pont\" of relation \"idempotency_keys\" does not exist",
        ),
        (
            "SET recovery_point = 'finished', locked_at = NULL, response_code = 201",
            "SET recovery_point = repeat('finished', 9), locked_at = NULL, response_code = 201",
            "violates check constraint",
        ),
    ];
    for (from, to, said) in cases {
        let mapping = MAPPING.replace(from, to);
        let line = line_of(&mapping, "applied = ");
        let Some(r) = rides("mapped failing statement", &mapping) else {
            return;
        };
        let stuck = r.ids(STUCK)[0];
        let before = r.rows();
        let out = r.decide(
            stuck,
            &["--applied", "--result-id", "ch_1", "--evidence", "seen"],
        );
        let err = stderr(&out);
        assert_ne!(code(&out), 0, "{err}");
        assert!(err.contains(&r.map.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("line {line} (decisions.applied")),
            "{err}"
        );
        assert!(err.contains(said), "{err}");
        assert_eq!(r.rows(), before);
        assert_eq!(r.decisions(), 0);
    }
}

/// The sample's statements are what docs/mapped-tables.md shows.
#[test]
fn the_docs_show_the_sample_mapping() {
    let docs = include_str!("../../../docs/mapped-tables.md");
    for line in MAPPING
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(docs.contains(line), "docs/mapped-tables.md lacks: {line}");
    }
}

#[test]
fn mapping_toml_beside_the_receivers_file_opens_only_a_database_that_has_its_table() {
    let Some(r) = rides("mapped beside receivers", MAPPING) else {
        return;
    };
    let config = tempfile::tempdir().unwrap();
    let settle_dir = config.path().join("settle");
    std::fs::create_dir(&settle_dir).unwrap();
    std::fs::write(settle_dir.join("receivers.toml"), "").unwrap();
    std::fs::write(settle_dir.join("mapping.toml"), MAPPING).unwrap();
    let list = |db: &std::path::Path| {
        let out = bin()
            .env("XDG_CONFIG_HOME", config.path())
            .args([
                "list",
                db.to_str().unwrap(),
                "--queue",
                "--all",
                "--format",
                "jsonl",
            ])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let mut ids = jsonl_ids(&out);
        ids.sort();
        ids
    };
    assert_eq!(list(&r.db), r.ids(STUCK));
    // A job queue's database beside it opens as that engine, not refused.
    let Some(river) = pg::fresh_database("mapped beside river") else {
        return;
    };
    let mut client = pg::connect(&river);
    client
        .batch_execute(include_str!("../../fixtures/jobqueue/river.sql"))
        .unwrap();
    client
        .batch_execute(include_str!("../../fixtures/jobqueue/river-jobs.sql"))
        .unwrap();
    assert!(!list(&river).is_empty());
}

#[test]
fn a_table_whose_id_is_an_int_is_read_and_decided_on() {
    let Some(db) = pg::fresh_database("mapped int id") else {
        return;
    };
    let mut client = pg::connect(&db);
    client
        .batch_execute(&DDL.replace("BIGSERIAL", "SERIAL"))
        .unwrap();
    client.batch_execute(SEED).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("rocket-rides.toml");
    std::fs::write(&map, MAPPING).unwrap();
    let r = Rides { db, map, _dir: dir };
    let stuck = r.ids(STUCK);
    assert_eq!(r.queue(), stuck);
    let before = r.rows();
    let out = r.decide(
        stuck[0],
        &["--not-applied", "--evidence", "no charge at Stripe"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        r.row(stuck[0], "recovery_point, response_code"),
        "finished|422"
    );
    only_changed(before, r.rows(), &[stuck[0]]);
}
