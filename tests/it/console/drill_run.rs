//! Drilling from the console end to end: the real binary in a
//! pseudo-terminal, the reference receiver (`settle receiver`) configured
//! for `place_order`. `D` runs the drill with its progress on the status
//! line, the run appears in the Drills view marked as run against a
//! receiver, the verdict is in the ledger and the detail says the contract
//! was drilled; Esc cancels a run and nothing is recorded for it; an op
//! type with no receiver is refused on the status line.

use crate::kit::pty;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(15);
/// A whole run against the reference receiver (the retention cases are
/// not run: a day's retention exceeds the default --max-wait).
const RUN: Duration = Duration::from_secs(90);

/// A ledger with one unknown `place_order` (idempotent, keys kept a day)
/// and one unknown `ship_parcel`, which no receiver serves.
fn ledger(dir: &Path) -> PathBuf {
    let ledger = dir.join("ledger.db");
    let out = settle(&["init", ledger.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
    sql(&ledger)
        .execute_batch(&format!(
            "INSERT INTO op_types VALUES ('place_order', 1, 86400, 'orders');
             INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
               max_attempts, created_at, updated_at)
             VALUES ('acme', 'place_order', 'k-order', 'sha256:00', 'unknown', 3, '{now}', '{now}'),
                    ('acme', 'ship_parcel', 'k-ship', 'sha256:01', 'unknown', 3, '{now}', '{now}');"
        ))
        .unwrap();
    ledger
}

/// The run folders in `drills`, by name.
fn runs(drills: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(drills)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The console on a fresh [`ledger`] with the reference receiver for
/// `place_order`, and a drill folder when `drill_dir`; the filter keeps
/// the operation with `key`. Returns the screen, the ledger, the drill
/// folder and the receiver's database.
fn console(dir: &Path, drill_dir: bool, key: &str) -> (Screen, PathBuf, PathBuf, PathBuf) {
    let ledger = ledger(dir);
    let (receivers, db) = reference_receivers(dir, 86400, None, true, true);
    let drills = dir.join("drills");
    let mut args = vec!["--receivers".to_string(), receivers.display().to_string()];
    if drill_dir {
        std::fs::create_dir(&drills).unwrap();
        args.extend(["--drill-dir".to_string(), drills.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut screen = Screen::console(&ledger, dir, &args, (160, 40));
    screen.wait_for("Queue 2 operations", WAIT);
    screen.only(key, WAIT);
    (screen, ledger, drills, db)
}

#[test]
fn d_drills_the_receiver_records_the_verdict_and_the_run_shows_in_the_drills_view() {
    let dir = tempfile::tempdir().unwrap();
    let (mut screen, ledger, drills, db) = console(dir.path(), true, "k-ship");

    // No receiver for ship_parcel: refused, nothing written.
    screen.send("D");
    screen.wait_for("drill of ship_parcel not run:", WAIT);
    screen.wait_for("no receiver for op type ship_parcel", WAIT);
    assert!(runs(&drills).is_empty());
    screen.send("/");
    screen.send("\x1b");
    screen.wait_for("Queue 2 operations", WAIT);

    screen.only("k-order", WAIT);
    screen.send("D");
    screen.wait_for("drilling place_order: case ", WAIT);
    screen.wait_for("esc cancels", WAIT);
    let done = screen.wait_for("drilled place_order: no flaw found", RUN);
    assert!(done.contains("recorded as drill verdict 1"), "{done}");
    let [run] = runs(&drills).try_into().unwrap();
    assert!(run.starts_with("drill-"), "{run}");
    assert!(
        done.contains(&format!("results {run}/drill-results.json")),
        "{done}"
    );
    assert_eq!(
        query_text(
            &ledger,
            "SELECT op_type || ' ' || operator FROM settle_drills"
        ),
        "place_order e2e-operator"
    );
    // The receiver's own database holds what the drill made.
    assert!(query_i64(&db, "SELECT count(*) FROM effects") > 0);

    // The detail says the contract was drilled, with the run.
    screen.send("\r");
    let stamp = run.trim_start_matches("drill-");
    screen.wait_for("proof       drilled on ", WAIT);
    screen.wait_for(&format!("(run {stamp})"), WAIT);
    screen.send("\x1b");

    // The Drills view shows the run, marked as run against a receiver.
    screen.send("3");
    let view = screen.wait_for("▸place_order drill-", WAIT);
    assert!(view.contains("concurrent_same_key"), "{view}");

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}

#[test]
fn esc_cancels_a_drill_and_a_cancelled_run_is_written_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (mut screen, ledger, drills, _db) = console(dir.path(), true, "k-order");
    screen.send("D");
    screen.wait_for("drilling place_order: case ", WAIT);
    screen.send("\x1b");
    screen.wait_for("drill of place_order cancelled", RUN);
    assert_eq!(runs(&drills).len(), 1, "what finished is written");
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT count(*) FROM sqlite_master WHERE name = 'settle_drills'"
        ),
        0,
        "a cancelled run records no verdict"
    );
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}

#[test]
fn without_a_drill_folder_d_says_where_the_results_would_go() {
    let dir = tempfile::tempdir().unwrap();
    let (mut screen, _ledger, _drills, _db) = console(dir.path(), false, "k-order");
    screen.send("D");
    screen.wait_for("no drill folder to write the results to", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}
