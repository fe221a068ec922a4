//! `settle copy` into SQLite: a new file gets settle's indexes after its
//! rows and ends as the safe path into a file that was there leaves it.

use std::path::Path;

use tempfile::TempDir;

use super::Ledger as Sqlite;
use crate::store::postgres::copy_tests::{sqlite_rows, sqlite_source};
use crate::store::{Access, Ledger};

/// The file's schema as `sqlite_master` holds it.
fn schema(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn a_new_file_gets_its_indexes_after_the_rows_and_ends_as_the_safe_path_leaves_it() {
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 300);
    let (from, _) = Ledger::open(&source, Access::ReadOnly).unwrap();
    let fast = dir.path().join("new.db");
    let safe = dir.path().join("existing.db");
    let new = Sqlite::create(&fast).unwrap();
    assert!(new.created_here);
    let mut existing = Sqlite::create(&safe).unwrap();
    existing.created_here = false;
    let (mut new, mut existing) = (Ledger::from(new), Ledger::from(existing));
    let a = from.copy_into(&mut new, &mut |_, _| {}).unwrap();
    let b = from.copy_into(&mut existing, &mut |_, _| {}).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.rows("operations"), 307);
    // The new file's rows went straight to it, not through its WAL, and it
    // is back in WAL mode. Its read model is gone, not left to catch the
    // copy up row by row: the next open builds it in bulk, and it reads
    // the copy.
    let wal = |db: &Path| std::fs::metadata(db.with_extension("db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal(&fast), 0);
    assert!(wal(&safe) > 0);
    let mode: String = rusqlite::Connection::open(&fast)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let all = crate::query::Query::default();
    assert_eq!(new.count(&all, chrono::Utc::now()).unwrap(), 307);
    drop((new, existing));
    let model = crate::store::sqlite::model::sidecar(&fast);
    assert!(!model.exists());
    let mut built = Vec::new();
    let (reopened, _) =
        Ledger::open_with_progress(&fast, Access::ReadWrite, &mut |p| built.push(p.step)).unwrap();
    assert!(built.iter().any(|s| s.starts_with("copying operations")));
    assert!(!reopened.filters_scan());
    assert_eq!(reopened.count(&all, chrono::Utc::now()).unwrap(), 307);
    drop(reopened);
    assert_eq!(sqlite_rows(&fast), sqlite_rows(&source));
    assert_eq!(sqlite_rows(&safe), sqlite_rows(&source));
    assert_eq!(schema(&fast), schema(&safe));
    assert!(
        schema(&fast)
            .iter()
            .any(|l| l.starts_with("index settle_decisions_op "))
    );
    // Built after the rows, the index sits past their pages; so does the
    // key of operations, which is the table's own again.
    assert!(root_page(&fast, "settle_decisions_op") > root_page(&safe, "settle_decisions_op"));
    let key = "sqlite_autoindex_operations_1";
    assert!(root_page(&fast, key) > root_page(&fast, "operations") + 1);
    assert_eq!(integrity(&fast), "ok");
    let conn = rusqlite::Connection::open(&fast).unwrap();
    let origin: String = conn
        .query_row(
            "SELECT origin FROM pragma_index_list('operations') WHERE \"unique\"",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(origin, "u");
    let again = conn
        .execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
             SELECT account, op_type, idem_key, fingerprint, state, max_attempts,
                 created_at, updated_at FROM operations LIMIT 1",
            [],
        )
        .unwrap_err();
    assert!(
        again.to_string().contains("UNIQUE constraint failed"),
        "{again}"
    );
}

/// The text the copy takes off a new file's `operations` is the key as
/// the file declares it, on the table's last line: if they drift apart,
/// a copy keeps the key through its load, and this says so.
#[test]
fn the_key_a_copy_lifts_is_the_one_a_new_file_declares() {
    use crate::store::sqlite::schema::SERVICE_TABLES;
    use crate::store::sqlite::transfer::OPERATIONS_KEY;
    assert!(SERVICE_TABLES.contains(&format!("{OPERATIONS_KEY}\n);")));
}

/// A source whose table lacks ledger-v1's key, holding two operations
/// with one key: the new file's key cannot be built, the error names the
/// key, and the file holds nothing.
#[test]
fn a_key_two_operations_share_ends_the_copy_with_nothing_written() {
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 30);
    let conn = rusqlite::Connection::open(&source).unwrap();
    let table: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'operations'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let unkeyed = table.replacen(crate::store::sqlite::transfer::OPERATIONS_KEY, "", 1);
    assert_ne!(
        unkeyed, table,
        "the source is made as settle makes a ledger"
    );
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF;
         ALTER TABLE operations RENAME TO keyed;
         {unkeyed};
         INSERT INTO operations SELECT * FROM keyed;
         DROP TABLE keyed;
         UPDATE operations SET idem_key = 'k-twice', account = 'acme', op_type = 'charge'
             WHERE id IN (SELECT id FROM operations ORDER BY id DESC LIMIT 2);"
    ))
    .unwrap();
    let twice: i64 = conn
        .query_row(
            "SELECT count(*) FROM operations WHERE idem_key = 'k-twice'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(twice, 2);
    drop(conn);
    let (from, _) = Ledger::open(&source, Access::ReadOnly).unwrap();
    let into = dir.path().join("new.db");
    let mut new = Ledger::from(Sqlite::create(&into).unwrap());
    let e = from
        .copy_into(&mut new, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2 operations share account 'acme', op_type 'charge' and idem_key 'k-twice'"),
        "{e}"
    );
    assert!(e.contains("nothing was written"), "{e}");
    drop(new);
    let conn = rusqlite::Connection::open(&into).unwrap();
    let held: i64 = conn
        .query_row("SELECT count(*) FROM operations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(held, 0);
    assert_eq!(integrity(&into), "ok");
}

/// What `PRAGMA integrity_check` says of the file: `ok`, or its faults.
fn integrity(path: &Path) -> String {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn root_page(path: &Path, name: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
}
