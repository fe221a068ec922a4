//! The console on a PostgreSQL ledger, end to end: the real binary in a
//! pseudo-terminal on a throwaway cluster, the screen read back through a
//! terminal parser. Another process decides and the screen shows it
//! without a key press (the watcher asks the server's WAL position); the
//! address's password never reaches the screen.

use crate::kit::pg;
use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn another_process_deciding_shows_on_the_console_without_a_key_press() {
    let Some(db) = pg::fresh_database("console live") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = demo_ledger(dir.path());
    let copied = settle(&["copy", sample.to_str().unwrap(), db.to_str().unwrap()]);
    assert_eq!(code(&copied), 0, "{}", stderr(&copied));
    // The same database, addressed with a password the screen must hide
    // (the throwaway cluster trusts the socket, so any password does).
    let host = db
        .to_str()
        .unwrap()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("host="))
        .unwrap()
        .to_string();
    let name = db
        .to_str()
        .unwrap()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("dbname="))
        .unwrap()
        .to_string();
    let address = format!("postgresql://postgres:hunter2@/{name}?host={host}");

    let mut screen = Screen::console(std::path::Path::new(&address), dir.path(), &[], (120, 32));
    screen.wait_for("Queue 11 operations", WAIT);
    let first = screen.wait_for("ord-7790-g", WAIT);
    assert!(
        first.contains(&format!("postgres@{host}/{name}")),
        "{first}"
    );
    assert!(!first.contains("hunter2"), "{first}");

    let other = settle(&[
        "decide",
        db.to_str().unwrap(),
        "2",
        "--retry-same-key",
        "--operator",
        "someone-else",
    ]);
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    screen.wait_for("Queue 10 operations", WAIT);
    let after = screen.wait_for("changed", WAIT);
    assert!(!after.contains("not live"), "{after}");

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored(), "terminal restored after quit");
}
