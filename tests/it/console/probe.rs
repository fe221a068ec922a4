//! Probing from the console end to end: the real binary in a pseudo-terminal
//! with a receivers file whose lookup is a shell script answering per key.
//! `p` records a probe, the decision form starts from it, a lookup that hangs
//! never holds up the keyboard, and what a lookup prints reaches the screen
//! only made visible.

use crate::kit::pty;

use std::path::Path;
use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(15);

/// One lookup for every op type, answering by key: ord-7731-a exists as
/// report-77, ord-7702-c answers once `release` exists in `dir`,
/// rpt-2026-W48-acme prints escape sequences, the rest are not found.
fn receivers(dir: &Path) -> String {
    let script = dir.join("lookup.sh");
    let release = dir.join("release");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$SETTLE_KEY\" in\n\
             ord-7731-a) echo report-77 ;;\n\
             ord-7702-c) echo $$ > {pid:?}; while [ ! -f {release:?} ]; do sleep 0.1; done; echo report-9 ;;\n\
             rpt-2026-W48-acme) printf 'rep-1\\n\\033[2J\\033[HPWNED\\033]0;owned\\007\\n' ;;\n\
             *) exit 3 ;;\nesac\n",
            release = release.display().to_string(),
            pid = dir.join("lookup.pid").display().to_string()
        ),
    )
    .unwrap();
    let file = dir.join("receivers.toml");
    std::fs::write(
        &file,
        format!(
            "[receivers.\"*\"]\nlookup = [\"/bin/sh\", {:?}]\ntimeout_s = 60\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    file.display().to_string()
}

/// Filters the queue to the one operation with `key` and keeps the filter.
fn only(screen: &mut Screen, key: &str) {
    screen.only(key, WAIT);
}

fn clear_filter(screen: &mut Screen) {
    screen.send("/");
    screen.send("\x1b");
    screen.wait_gone("filter: key:", WAIT);
}

#[test]
fn a_probe_fills_the_decision_form_found_as_applied_not_found_as_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &["--receivers", &r], (140, 36));
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("ord-7790-g", WAIT);

    // Found: `a` starts with the receiver's result id and cites the probe.
    only(&mut screen, "ord-7731-a");
    screen.send("p");
    screen.wait_for("probed 1 of 1 · 1 found", WAIT);
    screen.send("a");
    screen.wait_for("Record applied", WAIT);
    screen.wait_for("report-77", WAIT);
    screen.send("\r");
    screen.wait_for("recorded #2 applied", WAIT);
    clear_filter(&mut screen);

    // Not found: `n` starts with the probe as its evidence, and records.
    only(&mut screen, "inv-2026-11-0931");
    screen.send("p");
    screen.wait_for("probed 1 of 1 · 1 not found", WAIT);
    screen.send("n");
    screen.wait_for("Record not applied", WAIT);
    screen.wait_for("no record of the key", WAIT);
    screen.send("\r");
    screen.wait_for("recorded #4 not_applied", WAIT);

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert_eq!(
        query_text(
            &ledger,
            "SELECT result_id || ' | ' || evidence FROM decisions WHERE op_id = 2"
        )
        .split(" | ")
        .next(),
        Some("report-77")
    );
    let evidence = query_text(&ledger, "SELECT evidence FROM decisions WHERE op_id = 2");
    assert!(evidence.starts_with("probe "), "{evidence}");
    assert!(evidence.contains("result id report-77"), "{evidence}");
    let evidence = query_text(&ledger, "SELECT evidence FROM decisions WHERE op_id = 4");
    assert!(
        evidence.starts_with("probe ") && evidence.ends_with("no record of the key"),
        "{evidence}"
    );
    assert_eq!(
        query_text(
            &ledger,
            "SELECT group_concat(op_id || ':' || outcome || ':' || operator, ' ')
             FROM settle_probes"
        ),
        "2:found:e2e-operator 4:not_found:e2e-operator"
    );
}

#[test]
fn a_hanging_lookup_never_holds_the_keyboard_and_escapes_stay_visible_text() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &["--receivers", &r], (140, 36));
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("ord-7790-g", WAIT);

    // This lookup cannot end before `release` exists: help opening and
    // closing meanwhile shows the keyboard is still read.
    only(&mut screen, "ord-7702-c");
    screen.send("p");
    screen.wait_for("probing 0/1", WAIT);
    screen.send("?");
    screen.wait_for("Keys (", WAIT);
    screen.send("\x1b");
    screen.wait_gone("Keys (", WAIT);
    screen.send("p");
    screen.wait_for("still probing 0/1", WAIT);
    std::fs::write(dir.path().join("release"), "").unwrap();
    screen.wait_for("probed 1 of 1 · 1 found", WAIT);
    clear_filter(&mut screen);

    // Escape sequences in what the lookup printed: shown as visible
    // stand-ins in the detail, never acted on.
    only(&mut screen, "rpt-2026-W48-acme");
    screen.send("\r");
    screen.wait_for("#1 detail", WAIT);
    screen.send("p");
    screen.wait_for("probed 1 of 1 · 1 found", WAIT);
    screen.wait_for("Probes", WAIT);
    let text = screen.wait_for("␛[2J", WAIT);
    assert!(text.contains("found rep-1"), "{text}");
    assert!(text.contains("Queue 1 operation "), "not cleared: {text}");

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert_eq!(
        query_i64(&ledger, "SELECT COUNT(*) FROM settle_probes"),
        2,
        "both probes recorded"
    );
}

/// Whether process `pid` still runs (a zombie has ended: only its status
/// waits to be collected).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

#[test]
fn quitting_while_a_lookup_runs_ends_the_lookup_too() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &["--receivers", &r], (140, 36));
    screen.wait_for("ord-7790-g", WAIT);
    only(&mut screen, "ord-7702-c");
    screen.send("p");
    screen.wait_for("probing 0/1", WAIT);
    let pid_file = dir.path().join("lookup.pid");
    let started = std::time::Instant::now();
    while !pid_file.exists() && started.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(running(&pid), "the lookup runs");

    // Its timeout is 60 s and lives in the console: quitting must end it.
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    let quit = std::time::Instant::now();
    while running(&pid) && quit.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(&pid), "lookup {pid} outlived the console");
}
