//! The console over one incident's ledgers, end to end: two SQLite
//! ledgers a service wrote and a PostgreSQL one on a server of the test's
//! own (so it can be killed), opened as `settle @incident`. One queue
//! holds every ledger's rows, each naming its ledger; a decision on the
//! PostgreSQL ledger's row is written there and nowhere else; with that
//! server killed the header names it and the other two still list and
//! take decisions; started again, it is read again without a key press.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::kit::pg;
use crate::kit::pty::Screen;
use crate::kit::*;

const WAIT: Duration = Duration::from_secs(20);

/// Types `text` as an operator would.
fn type_in(screen: &mut Screen, text: &str) {
    for c in text.chars() {
        screen.send(&c.to_string());
    }
}

/// Filters the queue to `filter` and waits for `rows` rows.
fn filter(screen: &mut Screen, filter: &str, rows: usize) -> String {
    screen.send("/");
    type_in(screen, filter);
    screen.send("\r");
    screen.wait_for(&format!("Queue {rows} operations"), WAIT)
}

/// Records not applied on the row under the cursor; how long the queue
/// took to drop it after Enter.
fn not_applied(screen: &mut Screen, left: usize) -> Duration {
    screen.send("n");
    screen.wait_for("Record not applied", WAIT);
    type_in(screen, "no charge at the provider");
    let entered = Instant::now();
    screen.send("\r");
    screen.wait_for(&format!("Queue {left} operations"), WAIT);
    entered.elapsed()
}

fn decisions_in(path: &Path) -> i64 {
    query_i64(path, "SELECT COUNT(*) FROM decisions")
}

#[test]
fn a_group_console_decides_in_the_rows_own_ledger_and_outlives_a_killed_server() {
    let Some(server) = pg::crash_server("group console") else {
        return;
    };
    let bill = server.address("ledger");
    let out = settle(&["init", &bill]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    server.write_unknown_ops("ledger", 10);
    let dir = tempfile::tempdir().unwrap();
    let ledger = |name: &str, n: i64| -> PathBuf {
        let path = dir.path().join(format!("{name}.db"));
        sql(&path).execute_batch(SERVICE_SCHEMA).unwrap();
        write_failed_ops(&path, 1, n);
        path
    };
    let (pay, ship) = (ledger("pay", 30), ledger("ship", 20));
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("settle")).unwrap();
    std::fs::write(
        config.join("settle/config.toml"),
        format!(
            "[ledgers.pay]\naddress = {:?}\n[ledgers.ship]\naddress = {:?}\n\
             [ledgers.bill]\naddress = {bill:?}\n[groups.incident]\nledgers = [\"pay\", \"ship\", \"bill\"]\n",
            pay.display().to_string(),
            ship.display().to_string(),
        ),
    )
    .unwrap();

    let mut screen = Screen::start(
        &["@incident", "--operator", "night-shift"],
        160,
        40,
        &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
    );
    let first = screen.wait_for("Queue 60 operations", WAIT);
    assert!(first.contains("settle @incident"), "{first}");
    for name in ["pay ●", "ship ●", "bill ●", "ledger"] {
        assert!(first.contains(name), "{name}: {first}");
    }

    // A decision on the PostgreSQL ledger's row: written there alone.
    let only_bill = filter(&mut screen, "ledger:bill", 10);
    assert!(only_bill.contains(" bill "), "{only_bill}");
    assert!(
        !only_bill.contains("acct-"),
        "pay and ship rows left out: {only_bill}"
    );
    let took = not_applied(&mut screen, 9);
    eprintln!(
        "the decided row left the merged queue {} ms after Enter",
        took.as_millis()
    );
    let decided: Vec<(i64, String)> = server
        .client("ledger")
        .query("SELECT op_id, decision FROM decisions", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0].1, "not_applied");
    assert_eq!((decisions_in(&pay), decisions_in(&ship)), (0, 0));
    screen.send("\x1b");
    screen.wait_for("Queue 59 operations", WAIT);

    // The PostgreSQL server dies: the others go on, and the header says so.
    server.kill();
    let down = screen.wait_for("bill ✕ not read", WAIT);
    assert!(down.contains("pay ●") && down.contains("ship ●"), "{down}");
    screen.wait_for("Queue 50 operations", WAIT);
    filter(&mut screen, "ledger:ship", 20);
    not_applied(&mut screen, 19);
    assert_eq!((decisions_in(&pay), decisions_in(&ship)), (0, 1));
    screen.send("\x1b");
    screen.wait_for("Queue 49 operations", WAIT);

    // Back, it is read again without a key press.
    server.start_again().unwrap();
    screen.wait_gone("not read", WAIT);
    screen.wait_for("Queue 58 operations", WAIT);
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}
