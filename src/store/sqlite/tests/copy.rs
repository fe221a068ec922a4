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
    // Built after the rows, the index sits past their pages.
    assert!(root_page(&fast, "settle_decisions_op") > root_page(&safe, "settle_decisions_op"));
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

#[test]
fn a_new_files_load_cache_grows_with_the_operations_up_to_its_cap() {
    use crate::store::sqlite::copy::load_cache_kib;
    let mib = |operations| load_cache_kib(operations) / 1024;
    assert_eq!(
        [
            0,
            999_999,
            1_000_000,
            2_000_000,
            3_500_000,
            4_000_000,
            10_000_000,
            u64::MAX
        ]
        .map(mib),
        [64, 64, 64, 128, 192, 256, 256, 256]
    );
}
