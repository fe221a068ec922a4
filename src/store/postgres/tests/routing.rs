//! Reads on a standby and writes on the primary, on a real primary with a
//! synchronous streaming standby ([`super::super::testing_bed::standby_bed`]): where
//! each connection went, and an operator's own decision read back while the
//! standby's replay is paused (from the primary, said so) and once it runs
//! again (from the standby).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::domain::OperationId;
use crate::domain::{DecisionDraft, DecisionKind};
use crate::store::backend::{Decisions as _, History as _, Import as _, Session as _};
use crate::store::open::{Access, BUSY_TIMEOUT};
use crate::store::parity::{draft, fixture, now};
use crate::store::postgres::conn::Pg;
use crate::store::postgres::connect::Address;

fn in_recovery(pg: &Pg) -> bool {
    pg.client
        .borrow_mut()
        .query_one("SELECT pg_is_in_recovery()", &[])
        .unwrap()
        .get(0)
}

/// A decision the fixture's rules let through.
fn not_applied(op: i64) -> DecisionDraft {
    DecisionDraft {
        evidence: Some("receiver says no".into()),
        ..draft(op, DecisionKind::NotApplied, 0)
    }
}

fn decisions_on(pg: &Pg, op: i64) -> usize {
    pg.detail(OperationId(op)).unwrap().decisions.len()
}

#[test]
fn reads_go_to_the_standby_writes_to_the_primary_and_an_own_decision_is_read_back() {
    let Some(bed) = super::testing_bed::standby_bed("routing") else {
        return;
    };
    bed.create_database("ledger");
    let address = Address::parse(&PathBuf::from(bed.address("ledger"))).unwrap();
    let mut created = Pg::create(&address).unwrap();
    assert!(!in_recovery(&created), "creating is the primary's");
    let (ops, contracts) = fixture();
    created.import(&ops, &contracts).unwrap();
    drop(created);
    bed.caught_up();
    // As the console does: one ledger writes, another reads.
    let (mut writer, report) =
        Pg::open_waiting(&address, Access::ReadWrite, BUSY_TIMEOUT, &mut |_| {}).unwrap();
    assert_eq!(report.read_only_reason, None);
    let (pg, _) = Pg::open_waiting(&address, Access::ReadOnly, BUSY_TIMEOUT, &mut |_| {}).unwrap();
    assert!(in_recovery(&pg), "reads go to the standby");
    assert_eq!(decisions_on(&pg, 1), 0);

    // The standby replays nothing: the decision is read from the primary.
    let mut standby = bed.client(&bed.standby, "ledger");
    standby
        .batch_execute("SELECT pg_wal_replay_pause()")
        .unwrap();
    writer.record_decision(&not_applied(2), now()).unwrap();
    assert_eq!(decisions_on(&pg, 2), 1);
    let routed = pg.read_from().unwrap_or_default();
    assert!(routed.contains("from the primary"), "{routed}");
    assert!(!in_recovery(&pg));

    // Replaying again: reads go back to the standby by themselves.
    standby
        .batch_execute("SELECT pg_wal_replay_resume()")
        .unwrap();
    let started = Instant::now();
    while !in_recovery(&pg) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never went back to the standby"
        );
        assert_eq!(decisions_on(&pg, 2), 1);
        std::thread::sleep(Duration::from_millis(20));
    }
    let routed = pg.read_from().unwrap_or_default();
    assert!(routed.contains("reads from it again"), "{routed}");

    // A decision the standby replays in time is read there.
    writer.record_decision(&not_applied(6), now()).unwrap();
    assert_eq!(decisions_on(&pg, 6), 1);
    let routed = pg.read_from().unwrap_or_default();
    assert!(routed.contains("standby caught up in"), "{routed}");
    assert!(in_recovery(&pg));

    // --reads primary: one connection, on the primary.
    let primary = Address::parse(&crate::store::postgres::with_reads(
        &PathBuf::from(bed.address("ledger")),
        crate::store::postgres::Reads::Primary,
    ))
    .unwrap();
    let (on_primary, _) =
        Pg::open_waiting(&primary, Access::ReadOnly, BUSY_TIMEOUT, &mut |_| {}).unwrap();
    assert!(!in_recovery(&on_primary));
    assert_eq!(decisions_on(&on_primary, 6), 1);

    // The primary gone: a writable open says so, reads go on, a write is
    // refused with exit 5.
    bed.stop_primary();
    let (mut left, report) =
        Pg::open_waiting(&address, Access::ReadWrite, BUSY_TIMEOUT, &mut |_| {}).unwrap();
    assert_eq!(
        report.read_only_reason.as_deref(),
        Some("no primary reachable")
    );
    assert_eq!(decisions_on(&left, 2), 1);
    // A write looks for a primary for as long as the ledger's wait.
    left.wait = Duration::from_millis(500);
    let started = Instant::now();
    let refused = left.record_decision(&not_applied(7), now()).unwrap_err();
    assert_eq!(refused.exit_code(), 5, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("no primary reachable; nothing was written")
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
}
