//! The Drills view end to end through a pseudo-terminal: a case imported
//! with the real `settle drill import` links to its operation and `o`
//! opens it in the All view; a folder given with `--drill-dir` shows the
//! files it holds and picks up a new one without a key press.

use crate::kit::pty;

use std::path::Path;
use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(10);

fn copy_sample(to: &Path) {
    std::fs::copy("sample-data/drill-results.json", to).unwrap();
}

#[test]
fn a_drill_case_opens_its_timeline_and_jumps_to_its_imported_operation() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let drill = dir.path().join("run-a.json");
    copy_sample(&drill);
    let out = settle(&[
        "drill",
        "import",
        drill.to_str().unwrap(),
        ledger.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = query_i64(
        &ledger,
        "SELECT id FROM operations WHERE account = 'acct-drill' AND op_type = 'create_report' \
         AND idem_key = 'run-002-a'",
    );

    let mut screen = Screen::console(
        &ledger,
        dir.path(),
        &["--drill", drill.to_str().unwrap()],
        (160, 48),
    );
    screen.wait_for("Queue", WAIT);
    screen.send("3");
    screen.wait_for("changed_key", WAIT);
    // The second case: its timeline, and where the import put it.
    screen.send("j");
    screen.send("\r");
    let case = screen.wait_for("case changed_key", WAIT);
    assert!(case.contains("Timeline"), "{case}");
    assert!(case.contains("attempt 2"), "{case}");
    screen.wait_for(&format!("in the ledger: #{id}"), WAIT);

    screen.send("o");
    screen.wait_for(&format!("#{id} detail"), WAIT);
    // The All view, filtered to that one operation (the count comes from
    // the counter, the detail from the reader: each is waited for).
    screen.wait_for("All 1 operation", WAIT);
    screen.wait_for("acct-drill/create_report/run-002-a", WAIT);
    // And back: the operation names the case it came from.
    screen.wait_for("from drill case run-a.json/changed_key", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored());
}

#[test]
fn a_drill_file_dropped_into_the_watched_folder_appears_without_a_key_press() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    copy_sample(&runs.join("monday.json"));

    let mut screen = Screen::console(
        &ledger,
        dir.path(),
        &["--drill-dir", runs.to_str().unwrap()],
        (120, 32),
    );
    screen.wait_for("Queue", WAIT);
    screen.send("3");
    // The folder's file at start.
    screen.wait_for("Drills 7 rows", WAIT);
    screen.wait_for("monday.json", WAIT);

    // Written elsewhere and moved in, as a drill runner would publish it.
    let staged = dir.path().join("tuesday.tmp");
    copy_sample(&staged);
    std::fs::rename(&staged, runs.join("tuesday.json")).unwrap();
    let text = screen.wait_for("Drills 14 rows", WAIT);
    assert!(text.contains("tuesday.json"), "{text}");

    // Two runs: the comparison is offered and works.
    screen.send("v");
    screen.wait_for("comparing 2 runs, 7 cases", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored());
}

#[test]
fn a_drill_dir_that_is_not_a_folder_is_refused_before_the_terminal_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let missing = dir.path().join("nowhere");
    let out = settle(&[
        ledger.to_str().unwrap(),
        "--drill-dir",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not a folder"), "{}", stderr(&out));
}
