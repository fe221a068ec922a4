//! PostgreSQL killed while `settle decide` processes record decisions one
//! after another, as a crash leaves a server (`pg_ctl stop -m immediate`),
//! then started again on the same data: every decision settle
//! acknowledged is there once, the ones in flight landed whole or left no
//! trace, the audit chain holds, and the refusals meanwhile name the
//! server. Decisions go on after the restart without any step of the
//! operator's.

use crate::kit::pg;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::kit::pty::Screen;
use crate::kit::*;

/// Operations decided on, one `settle decide` process each.
const N: i64 = 240;

#[test]
fn a_server_killed_mid_decisions_loses_no_acknowledged_one_and_doubles_none() {
    let Some(server) = pg::crash_server("crash mid-decision") else {
        return;
    };
    let address = server.address("ledger");
    let out = settle(&["init", &address]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    server.write_unknown_ops("ledger", N);

    // One decider after another, as an operator's script would run them.
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let outcomes = Arc::new(Mutex::new(BTreeMap::new()));
    let decider = {
        let (address, acknowledged, outcomes) =
            (address.clone(), acknowledged.clone(), outcomes.clone());
        std::thread::spawn(move || {
            for op in 1..=N {
                let out = settle(&[
                    "decide",
                    &address,
                    &op.to_string(),
                    "--not-applied",
                    "--evidence",
                    "no charge at the provider",
                    "--operator",
                    "ann",
                    "--wait",
                    "2",
                ]);
                if code(&out) == 0 {
                    acknowledged.fetch_add(1, Ordering::SeqCst);
                } else {
                    // A script moves on after a refusal, a little later.
                    std::thread::sleep(Duration::from_millis(30));
                }
                outcomes
                    .lock()
                    .unwrap()
                    .insert(op, (code(&out), stderr(&out)));
            }
        })
    };
    let started = Instant::now();
    while acknowledged.load(Ordering::SeqCst) < 60 {
        assert!(started.elapsed() < Duration::from_secs(60), "no decisions");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill();
    std::thread::sleep(Duration::from_millis(1500));
    server.start_again().unwrap();
    decider.join().unwrap();

    let outcomes = outcomes.lock().unwrap();
    let recorded: BTreeMap<i64, i64> = server
        .client("ledger")
        .query("SELECT op_id, count(*) FROM decisions GROUP BY op_id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let states: BTreeMap<i64, String> = server
        .client("ledger")
        .query("SELECT id, state FROM operations", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let ok: Vec<i64> = outcomes
        .iter()
        .filter(|(_, (c, _))| *c == 0)
        .map(|(op, _)| *op)
        .collect();
    let failed: Vec<(&i64, &(i32, String))> =
        outcomes.iter().filter(|(_, (c, _))| *c != 0).collect();
    let lost = ok.iter().filter(|op| !recorded.contains_key(op)).count();
    let doubled = recorded.values().filter(|n| **n > 1).count();
    let landed_unacknowledged = failed
        .iter()
        .filter(|(op, _)| recorded.contains_key(op))
        .count();
    println!(
        "{N} decides: {} acknowledged, {} refused while the server was down \
         ({landed_unacknowledged} of those landed whole), {lost} lost, {doubled} doubled",
        ok.len(),
        failed.len()
    );
    assert_eq!(lost, 0, "acknowledged decisions lost");
    assert_eq!(doubled, 0, "decisions doubled");
    assert!(!failed.is_empty(), "the kill refused no decision");
    assert!(ok.len() > 60, "no decision went through after the restart");
    // Whole or nothing: a decision row goes with its operation's new state.
    for (op, state) in &states {
        let decided = recorded.contains_key(op);
        assert_eq!(
            state == "not_applied",
            decided,
            "operation {op}: state {state}, decided {decided}"
        );
    }
    // Each refusal names the server and what to do.
    for (op, (_, err)) in &failed {
        assert!(err.contains(server.dir.to_str().unwrap()), "op {op}: {err}");
        assert!(
            err.contains("what to do: the server is down"),
            "op {op}: {err}"
        );
        if err.contains(": connecting: ") {
            assert!(err.contains("nothing was written"), "op {op}: {err}");
        }
    }
    let said: std::collections::BTreeSet<&str> =
        failed.iter().map(|(_, (_, err))| err.trim()).collect();
    println!(
        "the refusals said:\n{}",
        said.into_iter().collect::<Vec<_>>().join("\n")
    );
    let audit = settle(&["audit", &address, "--verify"]);
    assert_eq!(code(&audit), 0, "{}", stderr(&audit));
    assert!(
        stdout(&audit).contains(&format!("chain intact: {} decisions", recorded.len())),
        "{}",
        stdout(&audit)
    );
}

/// The console on the server when it is killed: it says the connection
/// dropped, naming the server, and once the server is back it is live on
/// it again and decides there, without a restart, and no read shows the
/// connections that died with it.
#[test]
fn the_console_says_the_server_dropped_and_goes_on_once_it_is_back() {
    let Some(server) = pg::crash_server("crash console") else {
        return;
    };
    let address = server.address("ledger");
    let dir = tempfile::tempdir().unwrap();
    let sample = demo_ledger(dir.path());
    let copied = settle(&["copy", sample.to_str().unwrap(), &address]);
    assert_eq!(code(&copied), 0, "{}", stderr(&copied));
    let wait = Duration::from_secs(20);
    let mut screen = Screen::console(std::path::Path::new(&address), dir.path(), &[], (120, 32));
    screen.wait_for("Queue 11 operations", wait);
    screen.wait_for("● live", wait);

    server.kill();
    let down = screen.wait_for("✕ not live", wait);
    let said = down.replace(['│', '\n'], "");
    assert!(said.contains("live updates stopped"), "{down}");
    assert!(said.contains(server.dir.to_str().unwrap()), "{down}");
    assert_eq!(said.matches("what to do:").count(), 1, "{down}");
    server.start_again().unwrap();
    screen.send("\x1b");
    screen.wait_for("● live", Duration::from_secs(30));
    let other = settle(&[
        "decide",
        &address,
        "2",
        "--retry-same-key",
        "--operator",
        "someone-else",
    ]);
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    let after = screen.wait_for("Queue 10 operations", wait);
    println!("after:\n{after}");
    // The reader's and the counter's connections died with the server:
    // each read that met one made a new one and asked again, unseen.
    for failed in [
        "Broken pipe",
        "listing operations",
        "counting states",
        "connection closed",
    ] {
        assert!(!after.contains(failed), "{after}");
    }
    screen.send("q");
    assert!(screen.wait_exit(wait));
}
