//! A failover, through the real binary: a throwaway primary with a
//! synchronous streaming standby (`kit/pg.rs`'s bed), one multi-host
//! address for every command. With the primary stopped, reads answer from
//! the standby and a decision is refused with exit 5, writing nothing (one
//! given `--wait` carries on once the standby is promoted); after the
//! promotion the same address decides on the new primary, and every
//! decision acknowledged before the stop is there.

use crate::kit::pg;

use crate::kit::*;

fn decide_args(address: &str, op: i64, operator: &str, wait: &str) -> Vec<String> {
    [
        "decide",
        address,
        &op.to_string(),
        "--not-applied",
        "--evidence",
        "provider has no such order",
        "--operator",
        operator,
        "--wait",
        wait,
    ]
    .map(str::to_string)
    .to_vec()
}

fn decide(address: &str, op: i64, operator: &str) -> std::process::Output {
    let args = decide_args(address, op, operator, "1");
    settle(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn count(client: &mut ::postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap().get(0)
}

#[test]
fn a_failover_keeps_reads_refuses_writes_then_writes_to_the_promoted_standby() {
    let Some(bed) = pg::standby_bed("failover") else {
        return;
    };
    bed.create_database("ledger");
    let address = bed.address("ledger");
    let out = settle(&["init", &address]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    bed.client(&bed.primary, "ledger")
        .batch_execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
             SELECT 'acme', 'pay', 'k-' || i, 'sha256:00', 'unknown', 3, now(), now()
             FROM generate_series(1, 6) i",
        )
        .unwrap();
    // The ledger is read on the standby: it must have replayed it.
    bed.caught_up();
    for op in 1..=3 {
        let out = decide(&address, op, "before");
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = settle(&["list", &address, "--all", "--reads", "standby"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    bed.stop_primary();

    // The primary is gone: reads go on from the standby.
    let out = settle(&["list", &address, "--all"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = stdout(&out);
    for key in ["k-1", "k-4", "k-6"] {
        assert!(listed.contains(key), "{key} missing from\n{listed}");
    }
    // --reads primary asks for what is not there.
    let out = settle(&["list", &address, "--all", "--reads", "primary"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("in hot standby mode"),
        "{}",
        stderr(&out)
    );
    let out = settle(&["show", &address, "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("before"), "{}", stdout(&out));
    // A write is refused before anything is sent.
    let out = decide(&address, 4, "during");
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no primary reachable; nothing was written"),
        "{}",
        stderr(&out)
    );
    let mut standby = bed.client(&bed.standby, "ledger");
    assert_eq!(
        count(
            &mut standby,
            "SELECT count(*) FROM decisions WHERE operator = 'during'"
        ),
        0
    );

    // A decision that may wait carries on once a standby is promoted.
    let waiting = bin()
        .args(decide_args(&address, 5, "after", "60"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));

    // Promoted: the same address writes there.
    bed.promote();
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = decide(&address, 4, "after");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut promoted = bed.client(&bed.standby, "ledger");
    // Synchronous replication: every decision acknowledged before the stop
    // survived it.
    assert_eq!(
        count(
            &mut promoted,
            "SELECT count(*) FROM decisions WHERE operator = 'before'"
        ),
        3
    );
    assert_eq!(
        count(
            &mut promoted,
            "SELECT count(*) FROM decisions WHERE operator = 'after'"
        ),
        2
    );
    assert_eq!(count(&mut promoted, "SELECT count(*) FROM decisions"), 5);
    let out = settle(&["audit", &address, "--verify"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}
