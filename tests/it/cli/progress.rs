//! Long CLI work shows its progress as a bar with the rate and the time
//! left when stderr is a terminal, and ends it with one line saying how
//! much, how long and how fast; piped, the lines stay as they were, one
//! per step (the other CLI tests read those).

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;

const WAIT: Duration = Duration::from_secs(10);

/// `settle adopt` in a terminal: a bar that counts the steps and says the
/// rate and time left, no numbered lines.
#[test]
fn adopt_in_a_terminal_draws_a_bar() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("svc.db");
    sql(&l).execute_batch(SERVICE_SCHEMA).unwrap();
    let mut screen = pty::Screen::start(&["adopt", l.to_str().unwrap()], 140, 20, &[]);
    assert!(screen.wait_exit(WAIT));
    let text = screen.wait_for("adopted", WAIT);
    // The bar gives way to one line: how many steps, how long, how fast.
    let line = text
        .lines()
        .find(|l| l.starts_with("settle: adopting "))
        .unwrap_or_default();
    assert!(line.contains(" in ") && line.ends_with("/s"), "{text}");
    assert!(!text.contains("adopting: committing ("), "{text}");
}

/// A bulk decision in a terminal: the bar counts rows; piped, one line per
/// batch as before.
#[test]
fn a_bulk_decision_in_a_terminal_draws_a_bar_and_piped_prints_lines() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let ledger = l.to_str().unwrap();
    let args = [
        "decide",
        ledger,
        "--filter",
        "state:unknown",
        "--not-applied",
        "--evidence",
        "INC-7",
        "--operator",
        "tester",
    ];
    let count = stderr(&settle(&args))
        .split("--expect-count ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .map(str::to_string)
        .unwrap();
    let mut terminal = args.to_vec();
    terminal.extend_from_slice(&["--expect-count", &count]);
    let mut screen = pty::Screen::start(&terminal, 160, 30, &[]);
    // Some rows are refused (exit 3): the bar is what is checked here.
    screen.wait_exit(WAIT);
    let text = screen.wait_for("settle: deciding", WAIT);
    let line = text
        .lines()
        .find(|l| l.starts_with("settle: deciding "))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("{count}/{count}")) && line.ends_with("/s"),
        "{text}"
    );
    assert!(!text.contains("settle: batch 1 of"), "{text}");

    // The same on a fresh ledger, piped: the batch lines.
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let mut piped = terminal.clone();
    piped[1] = l.to_str().unwrap();
    let out = settle(&piped);
    assert!(
        stderr(&out).contains("settle: batch 1 of 1:"),
        "{}",
        stderr(&out)
    );
}
