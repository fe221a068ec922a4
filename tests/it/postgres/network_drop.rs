//! The network between settle and PostgreSQL drops, made for real by a
//! TCP proxy the test controls (it stalls, holding every byte with the
//! connections left open, then resets them): a read fails within its
//! bound with a message that names the server and what to do instead of
//! hanging the screen, the console goes on once the network is back, and
//! decisions made across stalls and resets are each recorded once.

use crate::kit::pg;

use std::time::{Duration, Instant};

use crate::kit::pty::Screen;
use crate::kit::*;

/// How long settle waits for an answer here before it cuts a connection.
const STALL_MS: &str = "1500";

#[test]
fn a_stalled_network_fails_the_read_in_time_and_the_console_goes_on_after_the_reset() {
    let Some(server) = pg::crash_server("network drop console") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = demo_ledger(dir.path());
    let copied = settle(&["copy", sample.to_str().unwrap(), &server.address("ledger")]);
    assert_eq!(code(&copied), 0, "{}", stderr(&copied));
    let proxy = pg::Proxy::to_unix(&server.dir.join(".s.PGSQL.5432"));
    let address = format!(
        "postgresql://postgres@127.0.0.1:{}/ledger?connect_timeout=3",
        proxy.port
    );
    let wait = Duration::from_secs(20);
    let mut screen = Screen::start(
        &[&address, "--operator", "e2e-operator"],
        120,
        32,
        &[
            ("XDG_CONFIG_HOME", dir.path().to_str().unwrap()),
            ("SETTLE_PG_STALL_MS", STALL_MS),
        ],
    );
    screen.wait_for("Queue 11 operations", wait);
    // The other connections (writer, counter, watch) open once the first
    // page is drawn: a stall while they connect would time them out too,
    // and their error would take the place of the read's on the screen.
    screen.wait_for("● live", wait);
    screen.wait_gone("READ-ONLY", wait);

    proxy.stall();
    let stalled = Instant::now();
    screen.send("/");
    for c in "acme".chars() {
        screen.send(&c.to_string());
    }
    screen.send("\r");
    let said = screen.wait_for("no answer from the server", Duration::from_secs(10));
    let took = stalled.elapsed();
    println!("stalled read refused after {took:?}:\n{said}");
    let flat = said.replace(['│', '\n'], "");
    assert!(
        flat.contains(&format!("127.0.0.1:{}", proxy.port)),
        "{said}"
    );
    assert!(
        flat.contains("settle reconnects at the next read"),
        "{said}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the stall held the read {took:?}"
    );

    // Once the network is back, the console goes on without a restart:
    // the filter is read again, then cleared (Esc).
    proxy.reset();
    screen.send("\x1b");
    screen.send("/");
    for c in "acme-corp\r".chars() {
        screen.send(&c.to_string());
    }
    screen.wait_for("filter: acme-corp", wait);
    let filtered = screen.wait_for("rpt-2026-W48-acme", wait);
    assert!(filtered.contains("ord-7760-a"), "{filtered}");
    screen.send("\x1b");
    let after = screen.wait_for("globex", wait);
    assert!(!after.contains("no answer from the server"), "{after}");
    // A stall while the console opened its writer leaves it read-only
    // only until the network is back, and the counts come back too.
    let writable = screen.wait_gone("READ-ONLY", wait);
    assert!(writable.contains("a applied"), "{writable}");
    screen.wait_gone("counts unavailable", wait);
    screen.send("q");
    assert!(screen.wait_exit(wait));
}

/// Decisions one after another through the proxy while it stalls and
/// resets: each acknowledged one is there once, none twice, the chain
/// holds, and each refusal names the server within its bound.
#[test]
fn decisions_across_stalls_and_resets_lose_none_and_double_none() {
    let Some(server) = pg::crash_server("network drop decisions") else {
        return;
    };
    let unix = server.address("ledger");
    let out = settle(&["init", &unix]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    const N: i64 = 60;
    server.write_unknown_ops("ledger", N);
    let proxy = std::sync::Arc::new(pg::Proxy::to_unix(&server.dir.join(".s.PGSQL.5432")));
    let address = format!(
        "postgresql://postgres@127.0.0.1:{}/ledger?connect_timeout=2",
        proxy.port
    );
    // The network stalls for a while every so often, then resets.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flapper = {
        let (proxy, done) = (proxy.clone(), done.clone());
        std::thread::spawn(move || {
            let mut flaps = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(2000));
                proxy.stall();
                std::thread::sleep(Duration::from_millis(2500));
                proxy.reset();
                flaps += 1;
            }
            flaps
        })
    };
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    for op in 1..=N {
        let started = Instant::now();
        let out = bin()
            .env("SETTLE_PG_STALL_MS", STALL_MS)
            .args([
                "decide",
                &address,
                &op.to_string(),
                "--not-applied",
                "--evidence",
                "no charge at the provider",
                "--operator",
                "ann",
                "--wait",
                "1",
            ])
            .output()
            .unwrap();
        // Connecting (2 s) and one statement's bound (1.5 s + the wait),
        // with room: never the hang a stall made before.
        assert!(started.elapsed() < Duration::from_secs(12), "op {op} hung");
        if code(&out) == 0 {
            acknowledged.push(op);
        } else {
            refused.push((op, stderr(&out)));
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let flaps = flapper.join().unwrap();

    let recorded: std::collections::BTreeMap<i64, i64> = server
        .client("ledger")
        .query("SELECT op_id, count(*) FROM decisions GROUP BY op_id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let lost = acknowledged
        .iter()
        .filter(|op| !recorded.contains_key(op))
        .count();
    let doubled = recorded.values().filter(|n| **n > 1).count();
    for (op, err) in refused.iter().take(3) {
        println!("op {op} refused: {err}");
    }
    println!(
        "{N} decides over {flaps} stalls and resets: {} acknowledged, {} refused \
         ({} of those landed whole), {lost} lost, {doubled} doubled",
        acknowledged.len(),
        refused.len(),
        refused
            .iter()
            .filter(|(op, _)| recorded.contains_key(op))
            .count()
    );
    assert_eq!(lost, 0, "acknowledged decisions lost");
    assert_eq!(doubled, 0, "decisions doubled");
    assert!(!refused.is_empty(), "no stall refused a decision");
    assert!(!acknowledged.is_empty(), "no decision went through");
    for (op, err) in &refused {
        assert!(
            err.contains(&format!("127.0.0.1:{}", proxy.port)),
            "op {op}: {err}"
        );
        assert!(err.contains("what to do"), "op {op}: {err}");
    }
    let audit = settle(&["audit", &unix, "--verify"]);
    assert_eq!(code(&audit), 0, "{}", stderr(&audit));
}
