//! Decisions on PostgreSQL beyond what every backend shares (the script of
//! every rule's refusal runs on all of them in [`crate::store::parity`]):
//! writers racing, a lock held past the wait, a tampered decision, a
//! connection lost during COMMIT, a copy there and back.

use crate::store::backend::{History as _, Import as _};
use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;

use super::testing;
use crate::domain::{DecisionId, DecisionKind, NewOperation, State};
use crate::error::Error;
use crate::store::backend::Decisions as _;
use crate::store::decide::Written;
use crate::store::parity::{draft, fixture, head, now, op, outcome, script};
use crate::store::postgres::conn::Pg;
use crate::store::postgres::connect::Address;
use crate::store::{ChainVerdict, Ledger};

/// A PostgreSQL ledger made by `settle init`'s code in a fresh database
/// (triggers and all), whose decisions wait up to `wait` for a lock; `None`
/// without a server.
fn pg_ledger(hint: &str, wait: Duration) -> Option<(PathBuf, Pg)> {
    let address = testing::fresh_database(hint)?;
    let mut pg = Pg::create(&Address::parse(&address).unwrap()).unwrap();
    pg.wait = wait;
    Some((address, pg))
}

fn sqlite_ledger() -> (TempDir, Ledger) {
    let dir = TempDir::new().unwrap();
    let ledger = Ledger::create(&dir.path().join("ledger.db")).unwrap();
    (dir, ledger)
}

fn run_script(ledger: &mut Ledger) -> Vec<String> {
    let (ops, contracts) = fixture();
    let report = ledger.import(&ops, &contracts).unwrap();
    assert_eq!(report.inserted, 7);
    script()
        .iter()
        .map(|d| outcome(&ledger.record_decision(d, now())))
        .collect()
}

#[test]
fn racing_deciders_on_one_version_leave_one_decision_and_on_many_operations_one_chain() {
    let Some((address, mut pg)) = pg_ledger("race", Duration::from_secs(30)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    let race = |op: i64| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let address = address.clone();
                    s.spawn(move || {
                        let addr = Address::parse(&address).unwrap();
                        let mut pg = Pg::connect(&addr, false, Duration::from_secs(30)).unwrap();
                        let mut d = draft(op, DecisionKind::Applied, 0);
                        d.result_id = Some(format!("r-{i}"));
                        d.operator = format!("op{i}");
                        pg.record_decision(&d, now())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    };
    // Eight deciders, one operation, one version: one wins.
    let same = race(6);
    assert_eq!(same.iter().filter(|r| r.is_ok()).count(), 1);
    assert_eq!(
        same.iter()
            .filter(|r| matches!(r, Err(e) if e.exit_code() == 4))
            .count(),
        7
    );
    // More ops to decide on at once: add eight fresh unknowns (ids 8..=15).
    let fresh: Vec<NewOperation> = (0..8)
        .map(|i| op(&format!("k-fresh-{i}"), "pay", State::Unknown))
        .collect();
    pg.import(&fresh, &[]).unwrap();
    let many = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let address = address.clone();
                s.spawn(move || {
                    let addr = Address::parse(&address).unwrap();
                    let mut pg = Pg::connect(&addr, false, Duration::from_secs(30)).unwrap();
                    let mut d = draft(8 + i, DecisionKind::Applied, 0);
                    d.result_id = Some(format!("r-{i}"));
                    pg.record_decision(&d, now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(many.iter().all(|r| r.is_ok()), "{many:?}");
    // Nine decisions, ids 1..=9, each linked to the one before: no fork.
    assert_eq!(head(pg.verify_chain().unwrap()).0, 9);
}

#[test]
fn a_row_locked_past_the_wait_is_busy_and_nothing_is_written() {
    let Some((address, mut pg)) = pg_ledger("busy", Duration::from_millis(200)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    // A service holding the operation's row mid-transaction.
    let mut service =
        postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    let mut held = service.transaction().unwrap();
    held.execute("SELECT 1 FROM operations WHERE id = 6 FOR UPDATE", &[])
        .unwrap();
    let mut d = draft(6, DecisionKind::Applied, 0);
    d.result_id = Some("r".into());
    let e = pg.record_decision(&d, now()).unwrap_err();
    assert!(matches!(e, Error::Busy { .. }), "{e}");
    assert_eq!(e.exit_code(), 5);
    held.rollback().unwrap();
    assert_eq!(head(pg.verify_chain().unwrap()).0, 0);
    // Once the service let go, the same decision goes through.
    pg.record_decision(&d, now()).unwrap();
}

#[test]
fn a_decision_edited_behind_settles_back_breaks_the_chain() {
    let Some((address, mut pg)) = pg_ledger("tamper", Duration::from_secs(5)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    for id in [6, 7] {
        let mut d = draft(id, DecisionKind::Applied, 0);
        d.result_id = Some(format!("r-{id}"));
        pg.record_decision(&d, now()).unwrap();
    }
    assert_eq!(head(pg.verify_chain().unwrap()).0, 2);
    // An attacker with rights: the append-only triggers off, a note rewritten.
    let mut attacker =
        postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    attacker
        .batch_execute(
            "ALTER TABLE decisions DISABLE TRIGGER ALL;
             UPDATE decisions SET result_id = 'r-forged' WHERE id = 1;",
        )
        .unwrap();
    match pg.verify_chain().unwrap() {
        ChainVerdict::Broken { at, problem } => {
            assert_eq!(at, DecisionId(1));
            assert!(problem.contains("columns were changed"), "{problem}");
        }
        intact => panic!("tampering not caught: {intact:?}"),
    }
}

#[test]
fn a_commit_whose_answer_was_lost_is_reported_as_found_after_reconnecting() {
    let Some((address, mut pg)) = pg_ledger("lost", Duration::from_secs(5)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    let mut d = draft(6, DecisionKind::Applied, 0);
    d.result_id = Some("r-6".into());
    let receipt = pg.record_decision(&d, now()).unwrap();
    let Some((_, Some((id, hash)))) = Some(head(pg.verify_chain().unwrap())) else {
        panic!("no head");
    };
    assert_eq!(id, receipt.decision_id);
    // The connection dies (as if during COMMIT).
    let pid: i32 = pg
        .client
        .get_mut()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let mut admin = postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .unwrap();
    let recorded = Written {
        id: id.0,
        chain_hash: hash.clone(),
    };
    assert!(pg.after_lost_commit(&recorded).is_ok());
    let never = Written {
        id: id.0 + 1,
        chain_hash: hash,
    };
    let e = pg.after_lost_commit(&never).unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost { checked: true, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("NOT recorded"), "{e}");
    // The ledger goes on deciding on the new connection.
    let mut d = draft(7, DecisionKind::Applied, 0);
    d.result_id = Some("r-7".into());
    pg.record_decision(&d, now()).unwrap();
}

#[test]
fn a_killed_connection_is_replaced_before_the_next_decision() {
    let Some((address, mut pg)) = pg_ledger("reconnect", Duration::from_secs(5)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    let pid: i32 = pg
        .client
        .get_mut()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let mut admin = postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .unwrap();
    let mut d = draft(6, DecisionKind::Applied, 0);
    d.result_id = Some("r-6".into());
    // The dead connection took nothing with it: the decision is run again
    // on a fresh one.
    pg.record_decision(&d, now()).unwrap();
    assert_eq!(head(pg.verify_chain().unwrap()).0, 1);
}

#[test]
fn a_ledger_copied_to_postgres_and_back_keeps_every_row_and_its_chain() {
    let Some((_, pg)) = pg_ledger("copy", Duration::from_secs(5)) else {
        return;
    };
    let mut pg = Ledger::from(pg);
    let (dir, mut lite) = sqlite_ledger();
    run_script(&mut lite);
    let source_chain = head(lite.verify_chain().unwrap());
    assert_eq!(source_chain.0, 4);

    let there = lite.copy_into(&mut pg, &mut |_, _| {}).unwrap();
    let expected = [
        ("op_types", 2),
        ("operations", 7),
        ("attempts", 7),
        ("events", 1),
        ("decisions", 4),
        ("retry_requests", 1),
        ("settle_probes", 0),
        // Never drilled: copied as never drilled.
        ("settle_drills", 0),
    ];
    assert_eq!(there.tables, expected);
    assert_eq!(head(pg.verify_chain().unwrap()), source_chain);

    let mut back = Ledger::create(&dir.path().join("back.db")).unwrap();
    let returned = pg.copy_into(&mut back, &mut |_, _| {}).unwrap();
    assert_eq!(returned.tables, expected);
    assert_eq!(head(back.verify_chain().unwrap()), source_chain);

    // A second copy into a ledger that holds operations is refused.
    let e = lite.copy_into(&mut pg, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("is not empty"), "{e}");

    // The copy goes on as a ledger: new operations get fresh ids (the
    // identities moved past the copied ones) and decisions chain on.
    let more = pg
        .import(&[op("k-after-copy", "pay", State::Unknown)], &[])
        .unwrap();
    assert_eq!(more.inserted, 1);
    let mut d = draft(8, DecisionKind::Applied, 0);
    d.result_id = Some("r-8".into());
    let receipt = pg.record_decision(&d, now()).unwrap();
    assert_eq!(receipt.decision_id, DecisionId(5));
    assert_eq!(head(pg.verify_chain().unwrap()).0, 5);
}

#[test]
fn a_deadlock_with_a_service_is_run_again_never_shown() {
    let Some((address, mut pg)) = pg_ledger("deadlock", Duration::from_secs(60)) else {
        return;
    };
    let (ops, contracts) = fixture();
    pg.import(&ops, &contracts).unwrap();
    let client = || postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    // A service holds operation 6's row...
    let mut service = client();
    let mut held = service.transaction().unwrap();
    held.execute("SELECT 1 FROM operations WHERE id = 6 FOR UPDATE", &[])
        .unwrap();
    let decider = std::thread::spawn(move || {
        let mut d = draft(6, DecisionKind::Applied, 0);
        d.result_id = Some("r-6".into());
        let result = pg.record_decision(&d, now());
        (pg, result)
    });
    // ...the decider takes the trail's lock and waits for that row...
    let mut watcher = client();
    while watcher
        .query_one("SELECT count(*) FROM pg_locks WHERE NOT granted", &[])
        .unwrap()
        .get::<_, i64>(0)
        == 0
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    // ...and the service now wants the trail: a cycle PostgreSQL breaks by
    // aborting one of the two (40P01).
    match held.batch_execute("LOCK TABLE decisions IN SHARE ROW EXCLUSIVE MODE") {
        Ok(()) => held.commit().unwrap(),
        Err(e) => {
            assert_eq!(e.code().map(|c| c.code()), Some("40P01"), "{e:?}");
            drop(held);
        }
    }
    let (pg, result) = decider.join().unwrap();
    let receipt = result.unwrap();
    assert_eq!(receipt.new_version, 1);
    assert_eq!(head(pg.verify_chain().unwrap()).0, 1);
}
