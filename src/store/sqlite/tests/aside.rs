//! A read model that fails under an open ledger (overwritten in place,
//! deleted): the read that met it is answered from the ledger's own tables,
//! the model is built again off the reading thread and comes back by
//! itself, and the ledger's rows never change.

use std::io::{Seek as _, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{adopted, insert_attempt, insert_op, now};
use crate::domain::Seek;
use crate::query::Query;
use crate::store::sqlite::model::sidecar;
use crate::store::{Access, Ledger};

/// Every row of the service's tables, as text.
fn service_rows(path: &Path) -> String {
    let conn = Connection::open(path).unwrap();
    let mut all = String::new();
    for table in ["operations", "attempts", "events"] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY rowid"))
            .unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..n {
                let v: rusqlite::types::Value = row.get(i).unwrap();
                all.push_str(&format!("{v:?}|"));
            }
            all.push('\n');
        }
    }
    all
}

fn ids(ledger: &Ledger) -> Vec<i64> {
    ledger
        .page(&Query::default(), Seek::First, 500, now())
        .unwrap()
        .iter()
        .map(|r| r.id.0)
        .collect()
}

/// Reads until the model is attached again (filters use its indexes).
fn back_within(ledger: &Ledger, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        let _ = ids(ledger);
        if !ledger.filters_scan() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A service ledger of 200 operations, adopted, and open through the
/// store's own facade, as the console and the CLI hold it.
fn open() -> (tempfile::TempDir, std::path::PathBuf, Ledger, Connection) {
    let (dir, sqlite, service) = adopted(200);
    let path = sqlite.path.clone();
    drop(sqlite);
    let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    assert!(!ledger.filters_scan(), "the read model is attached");
    (dir, path, ledger, service)
}

#[test]
fn a_read_model_overwritten_in_place_is_read_around_and_rebuilt_without_touching_the_ledger() {
    let (_dir, path, ledger, service) = open();
    let before: Vec<i64> = ids(&ledger);
    let model = sidecar(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&model)
        .unwrap();
    let len = file.metadata().unwrap().len();
    file.seek(std::io::SeekFrom::Start(0)).unwrap();
    file.write_all(&vec![0xA5; len as usize]).unwrap();
    file.sync_all().unwrap();
    drop(file);
    // The service goes on writing: the model must read the new row.
    insert_op(&service, 201, "acct-new", "k-0201", "unknown", None);
    insert_attempt(&service, 201, 1, Some("timeout after 30s"));
    let written = service_rows(&path);

    let after = ids(&ledger);
    assert_eq!(after[0], 201, "the new row, read from the ledger itself");
    assert_eq!(&after[1..], &before[..], "and every other row as before");
    assert!(
        back_within(&ledger, Duration::from_secs(20)),
        "the model never came back"
    );
    assert_eq!(ids(&ledger), after, "the rebuilt model finds the same rows");
    let check: String = Connection::open(&model)
        .unwrap()
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(service_rows(&path), written, "the ledger changed");
}

#[test]
fn a_read_model_deleted_under_an_open_ledger_is_built_again_while_it_stays_open() {
    let (_dir, path, ledger, service) = open();
    let model = sidecar(&path);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", model.display()));
    }
    insert_op(&service, 201, "acct-new", "k-0201", "unknown", None);
    let written = service_rows(&path);
    // The model looks at its file once a second.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(ids(&ledger)[0], 201);
    assert!(
        back_within(&ledger, Duration::from_secs(20)),
        "the model never came back"
    );
    assert!(model.is_file(), "no read model built again");
    assert_eq!(ids(&ledger)[0], 201);
    assert_eq!(service_rows(&path), written, "the ledger changed");
}
