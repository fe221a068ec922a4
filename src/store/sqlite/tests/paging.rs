//! Paging the list from any position, in id order or a column's, while a
//! service keeps inserting, and streaming the whole list in one pass.

use super::{Ledger, adopted, by, fill, ids, now, queue_ids};
use crate::domain::{OperationRow, Seek, Sort, SortColumn};
use crate::error::Error;
use crate::query::Query;
use crate::store::backend::Reads as _;
use crate::store::backend::Session as _;

#[test]
fn queue_pages_from_every_position_match_the_domains_queue() {
    let (_dir, ledger, _service) = adopted(60);
    let expected = queue_ids(&ledger);
    // 60 ops: 12 each of unknown/exhausted/conflict, 6 of 12 reserved stale.
    assert_eq!(expected.len(), 42);
    let q = Query::queue();
    let first = ledger.page(&q, Seek::First, 10, now()).unwrap();
    assert_eq!(ids(&first), expected[..10]);
    let last = ledger.page(&q, Seek::Last, 10, now()).unwrap();
    assert_eq!(ids(&last), expected[32..]);
    let after = ledger
        .page(&q, Seek::After(first[9].id), 10, now())
        .unwrap();
    assert_eq!(ids(&after), expected[10..20]);
    let before = ledger
        .page(&q, Seek::Before(after[0].id), 10, now())
        .unwrap();
    assert_eq!(ids(&before), expected[..10]);
}

#[test]
fn a_page_boundary_holds_when_a_service_inserts_in_between() {
    let (_dir, ledger, service) = adopted(30);
    let q = Query::queue();
    let first = ledger.page(&q, Seek::First, 5, now()).unwrap();
    let boundary = first[4].id;
    // Newer rows arrive: the next page still starts right after the boundary.
    fill(&service, 31, 40);
    let next = ledger.page(&q, Seek::After(boundary), 5, now()).unwrap();
    assert!(next.iter().all(|r| r.id < boundary));
    let expected = queue_ids(&ledger);
    let at = expected.iter().position(|id| *id == boundary.0).unwrap();
    assert_eq!(ids(&next), expected[at + 1..at + 6]);
    // And the newest page now shows them.
    let top = ledger.page(&q, Seek::First, 5, now()).unwrap();
    assert!(top[0].id.0 > 30, "{:?}", ids(&top));
}

#[test]
fn the_whole_list_streams_in_one_pass_and_stops_on_request() {
    let (_dir, ledger, _service) = adopted(25);
    let mut seen = Vec::new();
    let n = ledger
        .for_each_row(&Query::queue(), now(), &mut |row| {
            seen.push(row.id.0);
            Ok(())
        })
        .unwrap();
    assert_eq!(n as usize, seen.len());
    assert_eq!(seen, queue_ids(&ledger));

    // A cancel from another thread arrives while rows are read: here from
    // the row callback itself, so the test needs no timing.
    let handle = ledger.interrupt_handle();
    let mut read = 0;
    let err = ledger
        .for_each_row(&Query::default(), now(), &mut |_| {
            read += 1;
            handle.interrupt();
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, Error::Interrupted { .. }), "{err}");
    assert!(read < 25);
    // The ledger answers the next read normally.
    assert_eq!(
        ledger
            .page(&Query::default(), Seek::First, 3, now())
            .unwrap()
            .len(),
        3
    );
}

/// Every row of `filter` in `sort`'s order, read `size` rows a page by
/// seeking from each page's last row.
fn walk(ledger: &Ledger, filter: &str, sort: Sort, size: usize) -> Vec<OperationRow> {
    let q = Query::parse(filter).unwrap();
    let mut rows: Vec<OperationRow> = Vec::new();
    let mut seek = Seek::First;
    loop {
        let page = ledger.sorted_page(&q, sort, seek, size, now()).unwrap();
        let full = page.len() == size;
        rows.extend(page);
        match rows.last() {
            Some(r) if full => seek = Seek::After(sort.key_of(r)),
            _ => break rows,
        }
    }
}

#[test]
fn a_sorted_list_pages_through_ties_without_skipping_or_repeating() {
    // `fill` gives every third row two attempts and the others one: 27 and
    // 13 rows share a value, so pages of seven cross runs of equal values.
    let (_dir, ledger, _service) = adopted(40);
    for descending in [true, false] {
        let sort = by(SortColumn::Attempts, descending);
        let rows = walk(&ledger, "", sort, 7);
        let keys: Vec<(i64, i64)> = rows.iter().map(|r| (r.attempts, r.id.0)).collect();
        let mut want = keys.clone();
        want.sort();
        if descending {
            want.reverse();
        }
        assert_eq!(keys, want, "{sort}");
        assert_eq!(rows.len(), 40, "{sort}: every row once");
        let mut seen = ids(&rows);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 40, "{sort}: no row twice");

        // The last page ends with the list's last row, in list order, and
        // the page before it joins it exactly.
        let q = Query::default();
        let last = ledger.sorted_page(&q, sort, Seek::Last, 7, now()).unwrap();
        assert_eq!(ids(&last), ids(&rows[33..]), "{sort}");
        let before = ledger
            .sorted_page(&q, sort, Seek::Before(sort.key_of(&last[0])), 7, now())
            .unwrap();
        assert_eq!(ids(&before), ids(&rows[26..33]), "{sort}");
    }
}

#[test]
fn a_sorted_page_boundary_holds_when_a_service_inserts_in_between() {
    let (_dir, ledger, service) = adopted(20);
    let sort = by(SortColumn::Account, false);
    let q = Query::default();
    let first = ledger.sorted_page(&q, sort, Seek::First, 6, now()).unwrap();
    let boundary = sort.key_of(&first[5]);
    // New rows in the boundary's own account (and others) arrive.
    fill(&service, 21, 40);
    let next = ledger
        .sorted_page(&q, sort, Seek::After(boundary.clone()), 6, now())
        .unwrap();
    let all = walk(&ledger, "", sort, 100);
    let at = all.iter().position(|r| sort.key_of(r) == boundary).unwrap();
    assert_eq!(ids(&next), ids(&all[at + 1..at + 7]));
    let accounts: Vec<&str> = all.iter().map(|r| r.account.as_str()).collect();
    assert!(accounts.windows(2).all(|w| w[0] <= w[1]), "{accounts:?}");
}
