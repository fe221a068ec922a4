//! Counts and summaries kept current by the read model when a service
//! writes plain SQL, and each filter qualifier finding its rows.

use super::{adopted, ids, insert_attempt, insert_op, now, queue_ids};
use crate::domain::{Seek, State};
use crate::query::Query;
use crate::store::backend::Reads as _;

#[test]
fn counts_and_summaries_follow_plain_sql_writes() {
    let (_dir, ledger, service) = adopted(10);
    let before = ledger.state_counts(now()).unwrap();
    assert_eq!(before.total, 10);
    assert_eq!(before.get(&State::Unknown), 2);
    service
        .execute("UPDATE operations SET state = 'completed' WHERE id = 5", [])
        .unwrap();
    insert_op(&service, 11, "acct-x", "k-new", "unknown", None);
    service
        .execute_batch("DELETE FROM attempts WHERE op_id = 2; DELETE FROM operations WHERE id = 2")
        .unwrap();
    // An update and a delete that wrote no event: the read model's sweep
    // finds them (a round at most every 30 s; here at once).
    let sweep = || ledger.model.borrow().as_ref().unwrap().sweep_all().unwrap();
    sweep();
    let after = ledger.state_counts(now()).unwrap();
    assert_eq!(after.total, 10);
    assert_eq!(after.get(&State::Unknown), 2, "one moved out, one came in");
    assert_eq!(after.get(&State::Completed), 3);
    assert_eq!(after.get(&State::Exhausted), 1);
    // Reserved 3 (live lease) and 8 (passed): one stale reservation.
    assert_eq!(after.stale_reserved, 1);
    assert_eq!(after.queue(), 2 + 1 + 2 + 1);

    insert_attempt(&service, 11, 1, Some("TLS handshake failed"));
    insert_attempt(&service, 11, 2, Some("HTTP 503"));
    service
        .execute(
            "INSERT INTO events (op_id, at, event) VALUES (11, '2026-01-01T00:00:00Z', 'sent'),
                 (11, '2026-01-01T00:00:01Z', 'timeout')",
            [],
        )
        .unwrap();
    let row = &ledger
        .page(&Query::parse("key:k-new").unwrap(), Seek::First, 5, now())
        .unwrap()[0];
    assert_eq!(
        (
            row.attempts,
            row.last_error.as_deref(),
            row.last_event.as_deref()
        ),
        (2, Some("HTTP 503"), Some("timeout"))
    );
    service
        .execute("DELETE FROM attempts WHERE op_id = 11 AND attempt = 2", [])
        .unwrap();
    sweep();
    let row = &ledger
        .page(&Query::parse("key:k-new").unwrap(), Seek::First, 5, now())
        .unwrap()[0];
    assert_eq!(
        (row.attempts, row.last_error.as_deref()),
        (1, Some("TLS handshake failed"))
    );
}

#[test]
fn each_qualifier_finds_its_rows() {
    let (_dir, ledger, _service) = adopted(40);
    let find = |filter: &str| {
        let q = Query::parse(filter).unwrap();
        let mut rows = Vec::new();
        let mut seek = Seek::First;
        loop {
            let page = ledger.page(&q, seek, 7, now()).unwrap();
            rows.extend(ids(&page));
            match page.last() {
                Some(r) if page.len() == 7 => seek = Seek::After(r.id),
                _ => break rows,
            }
        }
    };
    let newest_first =
        |f: &dyn Fn(i64) -> bool| (1..=40).rev().filter(|i| f(*i)).collect::<Vec<_>>();
    assert_eq!(find("state:exhausted"), newest_first(&|i| i % 5 == 2));
    assert_eq!(
        find("state:unknown,conflict"),
        newest_first(&|i| i % 5 == 0 || i % 5 == 4)
    );
    assert_eq!(find("account:acct-3"), newest_first(&|i| i % 7 == 3));
    assert_eq!(find("type:charge").len(), 40);
    assert_eq!(find("type:refund"), Vec::<i64>::new());
    assert_eq!(find("key:k-0012"), vec![12]);
    assert_eq!(
        find("key:k-001*"),
        newest_first(&|i| (10..=19).contains(&i))
    );
    assert_eq!(find("attempts>1"), newest_first(&|i| i % 3 == 0));
    assert_eq!(
        find("attempts<2 state:exhausted"),
        newest_first(&|i| i % 5 == 2 && i % 3 != 0)
    );
    assert_eq!(find("err:reset"), newest_first(&|i| i % 3 == 0));
    assert_eq!(find("k-0033"), vec![33]);
}

#[test]
fn the_queue_and_the_stale_count_agree_with_the_domain_on_every_lease_form() {
    let (_dir, ledger, service) = adopted(0);
    let leases = [
        Some("2026-06-01T13:00:00+02:00"),
        Some("2026-06-01T12:30:00Z"),
        Some("2026-06-01 11:59:59"),
        Some("2026-06-01 12:00:01"),
        Some("1780300000"),
        Some("1790000000"),
        Some("soon"),
        None,
    ];
    for (i, lease) in leases.iter().enumerate() {
        insert_op(
            &service,
            i as i64 + 1,
            "a",
            &format!("k{i}"),
            "reserved",
            *lease,
        );
    }
    let page = ledger
        .page(&Query::queue(), Seek::First, 100, now())
        .unwrap();
    assert_eq!(ids(&page), vec![8, 5, 3, 1]);
    assert_eq!(queue_ids(&ledger), vec![8, 5, 3, 1]);
    assert_eq!(ledger.state_counts(now()).unwrap().stale_reserved, 4);
}
