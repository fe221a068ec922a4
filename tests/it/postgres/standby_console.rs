//! The console on a primary and its standby, end to end: the real binary
//! in pseudo-terminals on one multi-host address of the bed
//! (`kit/pg.rs`), a primary with a synchronous streaming standby.
//!
//! Reading from the standby, a commit on the primary leaves the Queue
//! without a key press (the measurement is printed). Through a failover:
//! the primary is stopped
//! as a crash leaves it: a console reading from the primary says "not
//! live", and every writable console says "read-only: no primary
//! reachable" while no primary answers, one opened then too. The standby
//! is promoted: each console reconnects by itself, turns writable, shows a
//! decision the CLI made on the new primary without a restart, and one
//! opened during the outage decides there.

use crate::kit::pg;
use crate::kit::pty;

use std::time::{Duration, Instant};

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(30);
const NO_PRIMARY: &str = "READ-ONLY: no primary reachable";

/// The bed's ledger, the demo's operations copied in, replayed on the
/// standby; its multi-host address.
fn demo_on_bed(bed: &pg::Bed, dir: &std::path::Path) -> String {
    bed.create_database("ledger");
    let address = bed.address("ledger");
    let sample = demo_ledger(dir);
    let copied = settle(&["copy", sample.to_str().unwrap(), &address]);
    assert_eq!(code(&copied), 0, "{}", stderr(&copied));
    bed.caught_up();
    address
}

#[test]
fn a_commit_on_the_primary_leaves_the_queue_of_a_console_reading_the_standby() {
    let Some(bed) = pg::standby_bed("standby live") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let address = demo_on_bed(&bed, dir.path());
    let args = ["--reads", "standby", "--read-only"];
    let mut screen = Screen::console(std::path::Path::new(&address), dir.path(), &args, (240, 32));
    screen.wait_for("Queue 11 operations", WAIT);
    let mut service = bed.client(&bed.primary, "ledger");
    let mut took = Vec::new();
    for key in [
        "ord-7790-g",
        "prov-ac-5521",
        "rfd-11950",
        "ord-7760-a",
        "ord-7745-s",
    ] {
        screen.wait_for(key, WAIT);
        // Quiet first, so a reread already under way does not answer.
        std::thread::sleep(Duration::from_millis(400));
        service
            .execute(
                "UPDATE operations SET state = 'completed', version = version + 1
                 WHERE idem_key = $1",
                &[&key],
            )
            .unwrap();
        let committed = Instant::now();
        screen.wait_gone(key, WAIT);
        took.push(committed.elapsed());
    }
    screen.wait_for("Queue 6 operations", WAIT);
    took.sort();
    // A measurement, not a bound: the machine's load decides it. The p95
    // of five is the slowest.
    eprintln!("primary commit to a standby reader's screen, sorted: {took:?}");
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}

#[test]
fn the_console_follows_a_failover_and_decides_on_the_promoted_standby() {
    let Some(bed) = pg::standby_bed("failover console") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let address = demo_on_bed(&bed, dir.path());
    let ledger = std::path::Path::new(&address);
    // Wide: the header names both hosts before its badges.
    let size = (240, 32);
    // Reads from the standby (the default with two hosts), and from the
    // primary.
    let mut standby_reader = Screen::console(ledger, dir.path(), &[], size);
    let mut primary_reader = Screen::console(ledger, dir.path(), &["--reads", "primary"], size);
    for screen in [&mut standby_reader, &mut primary_reader] {
        screen.wait_for("Queue 11 operations", WAIT);
        screen.wait_for("● live", WAIT);
    }

    bed.stop_primary();
    let lost = primary_reader.wait_for("✕ not live", WAIT);
    // The header never says it reads a hot standby. The error below it
    // may, once the watcher has tried every host: "…: connection closed;
    // …: server is in hot standby mode" names why each would not do,
    // and whether that try came before this screen is the machine's.
    let header = lost.lines().next().unwrap_or_default();
    assert!(!header.contains("hot standby"), "{lost}");
    primary_reader.wait_for(NO_PRIMARY, WAIT);
    // The standby's reads are as current as ever: nobody can commit.
    let outage = standby_reader.wait_for(NO_PRIMARY, WAIT);
    assert!(outage.contains("● live"), "{outage}");
    // A console opened now opens read-only and says why.
    let mut opened_during = Screen::console(ledger, dir.path(), &[], size);
    opened_during.wait_for("Queue 11 operations", WAIT);
    opened_during.wait_for(NO_PRIMARY, WAIT);
    opened_during.send("a");
    opened_during.wait_for("read-only", WAIT);

    bed.promote();
    for screen in [&mut standby_reader, &mut primary_reader, &mut opened_during] {
        screen.wait_gone("READ-ONLY", WAIT);
        screen.wait_for("● live", WAIT);
    }
    // A decision after the promotion, on the same address, shows in each
    // console without a restart.
    let after = settle(&[
        "decide",
        &address,
        "2",
        "--retry-same-key",
        "--operator",
        "after-promotion",
    ]);
    assert_eq!(code(&after), 0, "{}", stderr(&after));
    for screen in [&mut standby_reader, &mut primary_reader, &mut opened_during] {
        screen.wait_for("Queue 10 operations", WAIT);
    }
    // The console opened during the outage decides on the new primary.
    decide_here(
        &mut opened_during,
        "rpt-2026-W48-acme",
        "applied (unknown → completed)",
    );
    for screen in [&mut standby_reader, &mut primary_reader, &mut opened_during] {
        screen.wait_for("Queue 9 operations", WAIT);
        screen.send("q");
        assert!(screen.wait_exit(WAIT));
    }
    let mut promoted = bed.client(&bed.standby, "ledger");
    let written: i64 = promoted
        .query_one(
            "SELECT count(*) FROM decisions WHERE operator IN ('after-promotion', 'e2e-operator')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(written, 2);
}

/// Decides on the operation with `key` (one whose committed event gives
/// the result id): applied, with the result id the form suggests; waits
/// for the status line to say `then`; then the filter is cleared. Found by its key, not by moving the cursor: on a
/// loaded machine a reread that lands after `G` can put it back on top.
fn decide_here(screen: &mut Screen, key: &str, then: &str) -> String {
    screen.only(key, WAIT);
    screen.send("a");
    screen.wait_for("→ record applied with result id", WAIT);
    screen.send("\r");
    // Before the filter is cleared, which says something else there.
    let shown = screen.wait_for(then, WAIT);
    screen.send("/");
    for _ in 0..format!("key:{key}").chars().count() {
        screen.send("\x7f");
    }
    screen.send("\r");
    shown
}

#[test]
fn after_its_own_decision_the_console_says_where_it_read_it_from() {
    let Some(bed) = pg::standby_bed("read from") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let address = demo_on_bed(&bed, dir.path());
    let mut screen = Screen::console(std::path::Path::new(&address), dir.path(), &[], (240, 32));
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("● live", WAIT);

    // The standby replays nothing: the decision is read from the primary,
    // and the status line says so.
    let mut standby = bed.client(&bed.standby, "ledger");
    standby
        .batch_execute("SELECT pg_wal_replay_pause()")
        .unwrap();
    decide_here(
        &mut screen,
        "rpt-2026-W48-acme",
        "read from the primary: the standby had not replayed",
    );
    screen.wait_for("Queue 10 operations", WAIT);

    // Replaying again: the next decision is read once the standby caught up.
    standby
        .batch_execute("SELECT pg_wal_replay_resume()")
        .unwrap();
    bed.caught_up();
    decide_here(&mut screen, "ord-7790-g", "standby caught up");
    screen.wait_for("Queue 9 operations", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}
