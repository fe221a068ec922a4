//! Opening ledgers through the real binary: a service's ledger is adopted
//! without touching its rows; bad files are refused with a message naming the
//! file and the problem, and their bytes stay as they were.

use crate::kit::*;
use std::path::Path;

/// A ledger as a service creates it: plain SQL, schema version 0, no
/// console tables.
fn service_ledger(path: &Path) {
    let conn = sql(path);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO operations VALUES (1, 'acme', 'create_report', 'k-1', 'sha256:ab', '{\"w\":1}',
            'unknown', NULL, 3, NULL, NULL, NULL, '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 1);
         INSERT INTO operations VALUES (2, 'acme', 'create_report', 'k-2', 'sha256:cd', NULL,
            'completed', 'report-2', 3, NULL, NULL, NULL, '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 3);
         INSERT INTO attempts VALUES (1, 1, '2026-11-06T10:15:00Z', '2026-11-06T10:15:30Z', 'timeout', 'read timeout', NULL);
         INSERT INTO events (op_id, attempt, at, event, detail) VALUES (1, 1, '2026-11-06T10:15:01Z', 'committed', '{\"effect_id\":\"report-1\"}');",
    )
    .unwrap();
}

fn service_rows(path: &Path) -> String {
    let d = dump_tables(path, &["operations", "attempts", "events"]);
    assert!(!d.is_empty());
    d
}

fn dump_tables(path: &Path, tables: &[&str]) -> String {
    let conn = sql(path);
    let mut out = String::new();
    for t in tables {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {t} ORDER BY 1"))
            .unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        for r in rows {
            out.push_str(&format!("{t}:{}\n", r.unwrap().join("|")));
        }
    }
    out
}

#[test]
fn a_service_ledger_is_adopted_once_and_its_rows_are_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    service_ledger(&l);
    let before = service_rows(&l);

    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert_eq!(
        said.lines().filter(|l| l.contains("adopted")).count(),
        1,
        "{said}"
    );
    assert!(
        said.contains("table decisions") && said.contains("no service rows changed"),
        "{said}"
    );
    // Progress on stderr, one line per step, for big ledgers.
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l.contains("adopting: committing")),
        "{}",
        stderr(&out)
    );

    assert_eq!(
        query_i64(&l, "PRAGMA user_version"),
        settle::store::schema::SCHEMA_VERSION
    );
    for t in ["decisions", "retry_requests", "op_types"] {
        assert_eq!(
            query_i64(
                &l,
                &format!("SELECT COUNT(*) FROM sqlite_master WHERE name = '{t}'")
            ),
            1
        );
    }
    assert_eq!(before, service_rows(&l));

    let out = settle(&["list", l.to_str().unwrap(), "--queue"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("k-1"));
    assert!(
        !stdout(&out).contains("k-2"),
        "completed is not in the queue"
    );
    assert!(!stderr(&out).contains("adopt"), "{}", stderr(&out));

    // Adopting again has nothing left to do and says so.
    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("already adopted"), "{}", stdout(&out));
}

/// An adoption leaves no big WAL behind for every later open to read again
/// (schema 5's index builds left 177 MB after a million operations), even
/// while the service keeps the ledger open, which stops SQLite deleting it
/// on close. It writes only settle's own small tables to the ledger now,
/// and no longer truncates the WAL: a TRUNCATE checkpoint holds the
/// service's writes back while it waits for readers.
#[test]
fn adopting_leaves_no_big_wal_behind_while_the_service_has_the_ledger_open() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    service_ledger(&l);
    let service = sql(&l);
    let mode: String = service
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(
        service
            .query_row("SELECT COUNT(*) FROM operations", [], |r| r
                .get::<_, i64>(0))
            .unwrap(),
        2
    );

    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let wal = std::fs::metadata(l.with_extension("db-wal")).map_or(0, |m| m.len());
    assert!(
        wal < 256 * 1024,
        "the -wal file holds {wal} bytes after adopting"
    );
    // The adoption is in the database file all the same.
    assert_eq!(
        service
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        settle::store::schema::SCHEMA_VERSION
    );
}

/// The main file, and the -wal and -journal files beside it, as bytes.
fn file_state(l: &Path) -> (Vec<u8>, Vec<u8>, bool) {
    let wal = std::fs::read(l.with_extension("db-wal")).unwrap_or_default();
    let journal = l.with_extension("db-journal").exists();
    (std::fs::read(l).unwrap(), wal, journal)
}

/// Reading never writes: `list`, `show` and `audit` on
/// a ledger a service created read it as it is, leave every byte alone and
/// no -wal content behind, and say how to adopt it.
#[test]
fn reading_commands_never_adopt_or_write() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    service_ledger(&l);
    let before = file_state(&l);
    let ls = l.to_str().unwrap();
    for args in [
        vec!["list", ls],
        vec!["list", ls, "--queue", "--format", "json"],
        vec!["show", ls, "1"],
        vec!["show", ls, "acme/create_report/k-2", "--format", "json"],
        vec!["audit", ls],
    ] {
        let out = settle(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`settle adopt {ls}`")),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(before, file_state(&l), "{args:?} changed the ledger");
    }
    let out = settle(&["list", ls]);
    assert!(stdout(&out).contains("k-1") && stdout(&out).contains("k-2"));
    assert_eq!(query_i64(&l, "PRAGMA user_version"), 0);

    let out = settle(&["adopt", ls]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_ne!(before.0, std::fs::read(&l).unwrap());
    assert_eq!(
        query_i64(&l, "PRAGMA user_version"),
        settle::store::schema::SCHEMA_VERSION
    );
}

#[test]
fn init_creates_a_ledger_and_refuses_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("new.db");
    let out = settle(&["init", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        query_i64(&l, "PRAGMA user_version"),
        settle::store::schema::SCHEMA_VERSION
    );
    assert_eq!(query_i64(&l, "SELECT COUNT(*) FROM operations"), 0);
    let out = settle(&["init", l.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    // An empty ledger lists nothing, cleanly.
    let out = settle(&["list", l.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out).trim(), "[]");
}

/// Runs `args` on `file`, expects exit 1 with `why` in the message along
/// with the file's name, and the file's bytes unchanged.
fn assert_refused_unchanged(file: &Path, args: &[&str], why: &str) {
    let before = std::fs::read(file).unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.insert(1, file.to_str().unwrap());
    let out = settle(&all);
    assert_eq!(code(&out), 1, "{all:?}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains(why),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(before, std::fs::read(file).unwrap(), "the file changed");
    let wal = file.with_extension("db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
}

#[test]
fn a_file_that_is_not_sqlite_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.db");
    std::fs::write(
        &f,
        "these are not the operations you are looking for\n".repeat(100),
    )
    .unwrap();
    assert_refused_unchanged(&f, &["list"], "not an SQLite database");
    assert_refused_unchanged(
        &f,
        &[
            "decide",
            "1",
            "--applied",
            "--evidence",
            "x",
            "--operator",
            "t",
        ],
        "not an SQLite database",
    );
}

#[test]
fn a_newer_schema_is_refused_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("future.db");
    service_ledger(&l);
    sql(&l).execute_batch("PRAGMA user_version = 7").unwrap();
    assert_refused_unchanged(&l, &["list"], "schema version 7 is newer");
    assert_refused_unchanged(
        &l,
        &["show", "1", "--read-only"],
        "schema version 7 is newer",
    );
}

#[test]
fn a_missing_column_or_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("partial.db");
    sql(&l)
        .execute_batch(&SERVICE_SCHEMA.replace("fingerprint TEXT NOT NULL, ", ""))
        .unwrap();
    assert_refused_unchanged(&l, &["list"], "has no column `fingerprint`");

    let l = dir.path().join("noevents.db");
    let schema: String = SERVICE_SCHEMA
        .split("CREATE TABLE events")
        .next()
        .unwrap()
        .to_string();
    sql(&l).execute_batch(&schema).unwrap();
    assert_refused_unchanged(&l, &["list"], "table `events` is missing");

    let missing = dir.path().join("nope.db");
    let out = settle(&["list", missing.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no such file"), "{}", stderr(&out));
    assert!(!missing.exists(), "opening must not create a file");
}

#[test]
fn read_only_opens_write_nothing_not_even_adoption() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    service_ledger(&l);
    let before = std::fs::read(&l).unwrap();

    // --read-only: readable, not adopted.
    let out = settle(&["list", l.to_str().unwrap(), "--read-only"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("k-1"));
    assert!(
        stderr(&out).contains("without adopting"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, std::fs::read(&l).unwrap());

    // A file with no write permission: opened read-only, decisions refused.
    let mut perms = std::fs::metadata(&l).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&l, perms).unwrap();
    let out = settle(&["show", l.to_str().unwrap(), "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("k-1"), "{}", stdout(&out));
    let out = settle(&[
        "decide",
        l.to_str().unwrap(),
        "1",
        "--applied",
        "--evidence",
        "x",
        "--operator",
        "t",
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    // The reason, not advice about a --read-only nobody gave.
    assert!(
        stderr(&out).contains("not writable") && stderr(&out).contains("permissions"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, std::fs::read(&l).unwrap());
    assert_eq!(query_i64(&l, "PRAGMA user_version"), 0);
}

#[test]
fn list_formats_filters_and_no_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let ls = l.to_str().unwrap();

    let out = settle(&["list", ls, "--queue", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(
        ids,
        vec![14, 13, 12, 8, 7, 6, 5, 4, 3, 2, 1],
        "the queue, newest first"
    );
    assert!(
        rows.iter().find(|r| r["id"] == 8).unwrap()["stale_reservation"]
            .as_bool()
            .unwrap()
    );

    let out = settle(&[
        "list",
        ls,
        "--filter",
        "type:place_order attempts>1",
        "--format",
        "jsonl",
    ]);
    let ids: Vec<i64> = stdout(&out)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, vec![14, 6]);

    let out = settle(&[
        "list",
        ls,
        "--state",
        "exhausted,conflict",
        "--format",
        "csv",
    ]);
    let text = stdout(&out);
    assert!(text.starts_with("id,state,"), "{text}");
    assert_eq!(text.lines().count(), 5, "{text}");

    let out = settle(&["list", ls, "--filter", "err:circuit"]);
    assert!(stdout(&out).contains("rfd-11950"), "{}", stdout(&out));

    let out = settle(&["list", ls, "--filter", "state:bogus"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("unknown state"), "{}", stderr(&out));

    // --limit pages, --all reads everything a page at a time.
    let out = settle(&["list", ls, "--limit", "5", "--format", "jsonl"]);
    assert_eq!(stdout(&out).lines().count(), 5);
    let out = settle(&["list", ls, "--all", "--format", "jsonl"]);
    assert_eq!(
        stdout(&out).lines().count() as i64,
        query_i64(&l, "SELECT COUNT(*) FROM operations")
    );

    // Ledger text with escape sequences never reaches the terminal intact,
    // and piped output carries no colour.
    for args in [
        vec!["list", ls, "--all"],
        vec!["show", ls, "12"],
        vec!["list", ls, "--all", "--format", "csv"],
    ] {
        let out = settle(&args);
        assert!(
            !out.stdout.contains(&0x1b),
            "{args:?} printed an escape byte"
        );
    }
    let out = settle(&["show", ls, "12"]);
    assert!(stdout(&out).contains("␛[31mFAILED"), "{}", stdout(&out));
}

#[test]
fn usage_errors_exit_2_and_help_teaches() {
    let out = settle(&["decide", "x.db", "1"]);
    assert_eq!(code(&out), 2);
    let out = settle(&["--help"]);
    assert_eq!(code(&out), 0);
    let help = stdout(&out);
    assert!(
        help.contains("Exit status") && help.contains("settle demo"),
        "{help}"
    );
    let out = settle(&["completions", "bash"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("_settle"));
}

#[test]
fn adopting_a_file_that_cannot_be_written_says_why_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    service_ledger(&l);
    let mut perms = std::fs::metadata(&l).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&l, perms).unwrap();
    let before = file_state(&l);
    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not writable") && stderr(&out).contains("permissions"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, file_state(&l));
}

#[test]
fn list_sorts_by_a_column_with_ties_in_id_order() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let ls = l.to_str().unwrap();
    let rows = |sort: &str| -> Vec<(i64, i64)> {
        let out = settle(&["list", ls, "--queue", "--sort", sort, "--format", "jsonl"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                (r["attempts"].as_i64().unwrap(), r["id"].as_i64().unwrap())
            })
            .collect()
    };
    let up = rows("attempts:asc");
    let mut want = up.clone();
    want.sort();
    assert_eq!(up, want, "fewest attempts first, then the oldest id");
    assert_eq!(up.len(), 11, "the whole queue");
    assert!(up.first().unwrap().0 < up.last().unwrap().0, "{up:?}");
    let mut down = rows("attempts");
    down.reverse();
    assert_eq!(down, up, "a column alone reads descending");

    let out = settle(&["list", ls, "--sort", "attempt"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown sort column"),
        "{}",
        stderr(&out)
    );
}

/// Every row of a service's ledger shown without adopting it, past the
/// first page: each operation's newest event is the one its `events` hold
/// (gathered once for the whole list, not scanned per row), the file stays
/// as it was, and the rows are those the adopted ledger lists.
#[test]
fn listing_every_row_of_an_unadopted_ledger_gives_each_its_newest_event_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("service.db");
    let conn = sql(&l);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    conn.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
         INSERT INTO operations SELECT i, 'acct-' || (i % 7), 'pay', 'k-' || i, 'sha256:00',
             NULL, CASE i % 3 WHEN 0 THEN 'unknown' ELSE 'exhausted' END, NULL, 3, NULL, NULL,
             NULL, '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 1 FROM n;
         -- Events interleaved across operations, so an old one's newest
         -- event sits far from the table's end.
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000)
         INSERT INTO events (op_id, attempt, at, event, detail)
             SELECT 1 + (i * 7) % 3000, 1, '2026-11-06T10:15:01Z', 'event-' || i, NULL FROM n;",
    )
    .unwrap();
    drop(conn);
    let bytes = std::fs::read(&l).unwrap();
    let newest: std::collections::BTreeMap<i64, String> = {
        let conn = sql(&l);
        let mut stmt = conn
            .prepare(
                "SELECT op_id, event FROM events WHERE id IN (SELECT max(id) FROM events GROUP BY op_id)",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let listed = |path: &Path| -> Vec<serde_json::Value> {
        let out = settle(&[
            "list",
            path.to_str().unwrap(),
            "--all",
            "--format",
            "jsonl",
            "--read-only",
        ]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let rows = listed(&l);
    assert_eq!(rows.len(), 3000);
    for row in &rows {
        let id = row["id"].as_i64().unwrap();
        assert_eq!(
            row["last_event"].as_str(),
            Some(newest[&id].as_str()),
            "{row}"
        );
    }
    assert_eq!(
        std::fs::read(&l).unwrap(),
        bytes,
        "a look wrote to the file"
    );

    let adopted = dir.path().join("adopted.db");
    std::fs::copy(&l, &adopted).unwrap();
    let out = settle(&["adopt", adopted.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(listed(&adopted), rows);
}
