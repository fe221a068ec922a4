//! The console end to end: the real binary in a pseudo-terminal, real keys,
//! the screen read back through a terminal parser, and the ledger checked
//! with SQL afterwards. Also checks that another process's write shows up
//! without a key press, and that quitting restores the terminal.

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn decide_in_the_console_and_see_another_process_write_live() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 32));
    screen.wait_for("Queue 11 operations", WAIT);
    // The title's count and the rows arrive from different workers: wait
    // for a row before pressing keys that act on rows.
    screen.wait_for("ord-7790-g", WAIT);
    // The worker's counts arrive without a key press.
    screen.wait_for("unknown 6", WAIT);

    // Filter live as you type; Esc clears it.
    screen.send("/");
    for c in "account:globex".chars() {
        screen.send(&c.to_string());
    }
    screen.wait_for("Queue 3 operations", WAIT);
    let filtered = screen.wait_for("ord-7731-a", WAIT);
    assert!(!filtered.contains("rpt-2026-W48-acme"), "{filtered}");
    screen.send("\x1b");
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("rpt-2026-W48-acme", WAIT);

    // The oldest queue row is operation 1: a committed effect, no reply.
    screen.send("G");
    screen.send("a");
    screen.wait_for("Record applied", WAIT);
    screen.wait_for("result id report-8812", WAIT);
    screen.send("\r");
    screen.wait_for("recorded #1 applied (unknown → completed)", WAIT);
    screen.wait_for("Queue 10 operations", WAIT);

    // Another process decides: the console shows it without a key press.
    let other = settle(&[
        "decide",
        ledger.to_str().unwrap(),
        "2",
        "--retry-same-key",
        "--operator",
        "someone-else",
    ]);
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    screen.wait_for("Queue 9 operations", WAIT);
    screen.wait_for("changed", WAIT);

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored(), "terminal restored after quit");

    assert_eq!(
        query_i64(
            &ledger,
            "SELECT COUNT(*) FROM decisions WHERE operator = 'e2e-operator'"
        ),
        1
    );
    assert_eq!(
        query_text(
            &ledger,
            "SELECT operator || ' ' || decision || ' ' || op_id || ' ' || result_id
             FROM decisions WHERE operator = 'e2e-operator'"
        ),
        "e2e-operator applied 1 report-8812"
    );
    assert_eq!(state(&ledger, 1), "completed");
}

#[test]
fn demo_opens_the_console_on_the_sample_data() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("demo");
    let mut screen = Screen::start(
        &["demo", target.to_str().unwrap()],
        100,
        30,
        &[("XDG_CONFIG_HOME", dir.path().to_str().unwrap())],
    );
    screen.wait_for("Queue 11 operations", WAIT);
    // The rows come from the reader, the title's count from the counter.
    screen.wait_for("ord-7790-g", WAIT);
    screen.send("3");
    screen.wait_for("duplicate effect", WAIT);
    // Enter opens the first case: its verdict and the findings about it.
    screen.send("\r");
    let text = screen.wait_for("case naive_retry", WAIT);
    assert!(text.contains("Findings"), "{text}");
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored());
}

/// About 10 MB of JSON parameters: many small objects, as a service that
/// keeps a whole request body writes them.
fn huge_params() -> String {
    let items: Vec<String> = (0..270_000)
        .map(|i| format!(r#"{{"n":{i},"sku":"item-{i:08}","qty":1}}"#))
        .collect();
    format!(r#"{{"items":[{}]}}"#, items.join(","))
}

#[test]
fn a_detail_with_10_mb_of_params_answers_keys_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let params = huge_params();
    assert!(params.len() > 9_000_000);
    sql(&ledger)
        .execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state,
                max_attempts, created_at, updated_at, version)
             VALUES ('acme', 'bulk_import', 'huge-params', 'sha256:00', ?1, 'unknown', 3,
                '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 1)",
            [&params],
        )
        .unwrap();
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 40));
    screen.wait_for("huge-params", WAIT);
    screen.send("\r");
    screen.wait_for("detail (J/K scroll)", WAIT);
    // Scroll as an operator would; each key must be taken, not queued
    // behind formatting megabytes.
    for _ in 0..10 {
        screen.send("J");
    }
    screen.send("q");
    // A generous bound: a correctness check that `q` is answered, not a
    // benchmark (the frozen console took minutes).
    assert!(screen.wait_exit(Duration::from_secs(5)));
    assert!(screen.restored());
}
