//! The read model (`LEDGER-settle`) deleted or overwritten while a console
//! has it open, in the real binary: the console keeps working and shows
//! what a service writes meanwhile, the model is built again while it
//! runs, the ledger's own tables do not change, and the next console
//! finds the model without a manual step.

use crate::kit::pty::Screen;
use crate::kit::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Every row of the service's tables, as text: what must not change.
fn service_rows(path: &Path) -> String {
    let conn = sql(path);
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

fn model_files(ledger: &Path) -> Vec<PathBuf> {
    ["-settle", "-settle-wal", "-settle-shm"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", ledger.display())))
        .filter(|p| p.exists())
        .collect()
}

/// An adopted ledger of 100 operations and a console open on it.
fn console_on_adopted() -> (tempfile::TempDir, PathBuf, Screen) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    sql(&ledger).execute_batch(SERVICE_SCHEMA).unwrap();
    write_failed_ops(&ledger, 1, 100);
    let adopted = settle(&["adopt", ledger.to_str().unwrap()]);
    assert!(adopted.status.success(), "{adopted:?}");
    assert!(
        !model_files(&ledger).is_empty(),
        "adoption made no read model"
    );
    let mut screen = Screen::console(&ledger, dir.path(), &[], (160, 30));
    screen.wait_for("k-000100", WAIT);
    // The header's "live" says the watcher has its connection.
    screen.wait_for("● live", WAIT);
    (dir, ledger, screen)
}

/// After the fault: the service writes, the console shows it, the ledger
/// is what the service wrote, and a new process lists every operation.
fn keeps_working(ledger: &Path, screen: &mut Screen) {
    write_failed_ops(ledger, 101, 5);
    let before = service_rows(ledger);
    // The live count says the service's rows arrived; the list keeps the
    // operator's row in place, so the newest are at its top.
    screen.wait_for("Queue 105", WAIT);
    screen.send("g");
    let shown = screen.wait_for("k-000105", WAIT);
    assert!(!shown.contains("error"), "{shown}");
    screen.send("/");
    screen.send("account:acct-005\r");
    let filtered = screen.wait_for("Queue 3 operations", WAIT);
    assert!(filtered.contains("k-000105"), "{filtered}");
    // The model is built again while the console runs, off its reading
    // thread: the service's rows made a read meet the fault.
    let model = PathBuf::from(format!("{}-settle", ledger.display()));
    let rebuilt = || {
        rusqlite::Connection::open_with_flags(&model, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)))
            .is_ok_and(|v| v == "ok")
    };
    let started = std::time::Instant::now();
    while !rebuilt() {
        assert!(
            started.elapsed() < WAIT,
            "no read model rebuilt under the console"
        );
        // A key reads, and a read looks at the model's file.
        screen.send("g");
        std::thread::sleep(Duration::from_millis(300));
    }
    screen.send("q");
    assert!(screen.wait_exit(Duration::from_secs(10)));
    assert_eq!(service_rows(ledger), before, "the ledger changed");
    let out = settle(&[
        "list",
        ledger.to_str().unwrap(),
        "--queue",
        "--all",
        "--format",
        "jsonl",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 105, "{}", stderr(&out));
    // The next console rebuilds the model on its writer, with no step of
    // the operator's, and shows every row.
    let mut again = Screen::console(ledger, ledger.parent().unwrap(), &[], (160, 30));
    again.wait_for("k-000105", WAIT);
    again.wait_for("Queue 105", WAIT);
    again.send("q");
    assert!(again.wait_exit(Duration::from_secs(10)));
    assert_eq!(
        service_rows(ledger),
        before,
        "the rebuild changed the ledger"
    );
}

#[test]
fn a_read_model_deleted_under_an_open_console_is_rebuilt_and_the_ledger_untouched() {
    let (_dir, ledger, mut screen) = console_on_adopted();
    for file in model_files(&ledger) {
        std::fs::remove_file(file).unwrap();
    }
    keeps_working(&ledger, &mut screen);
}

#[test]
fn a_read_model_overwritten_in_place_under_an_open_console_is_rebuilt_and_the_ledger_untouched() {
    use std::io::Write as _;
    let (_dir, ledger, mut screen) = console_on_adopted();
    let model = model_files(&ledger)[0].clone();
    let len = std::fs::metadata(&model).unwrap().len() as usize;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&model)
        .unwrap();
    file.write_all(&vec![0x5A; len]).unwrap();
    file.sync_all().unwrap();
    drop(file);
    keeps_working(&ledger, &mut screen);
}
