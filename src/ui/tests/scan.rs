//! A filter read a slice of ids at a time on a ledger without indexes:
//! the title counts what was found "so far" and says how far the scan
//! got, the status line says what adds the indexes, and the list holds
//! only matches (or says none was found yet).

use super::{frame, sized};
use crate::app::Msg;
use crate::app::scan::ListScan;
use crate::store::ScanPlace;

/// The 80x24 Queue filtered to `filter`, its scan a fifth of the way
/// through a million ids.
fn midway(filter: &str) -> String {
    let mut h = sized(80, 24);
    h.receive(Msg::FiltersScan(true));
    h.keys("/");
    h.type_text(filter);
    h.keys("enter");
    let found = h.app.queue.window.rows.len() as u64;
    h.app.queue.scan = Some(ListScan {
        place: Some(ScanPlace {
            low: 1,
            high: 1_000_000,
            next: 800_001,
        }),
        found,
        ..ListScan::default()
    });
    h.app.queue.window.at_end = false;
    h.app.status = None;
    frame(&h)
}

#[test]
fn a_scan_under_way_80x24() {
    let frame = midway("beta");
    assert!(frame.contains("so far"), "{frame}");
    assert!(frame.contains("scanning 200,000 of 1,000,000"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn a_scan_that_found_nothing_yet_80x24() {
    let frame = midway("nobody");
    assert!(frame.contains("no match yet"), "{frame}");
    insta::assert_snapshot!(frame);
}

#[test]
fn a_scan_done_counts_exactly_80x24() {
    let mut h = sized(80, 24);
    h.receive(Msg::FiltersScan(true));
    h.keys("/");
    h.type_text("beta");
    h.keys("enter");
    let frame = frame(&h);
    assert!(!frame.contains("scanning"), "{frame}");
    assert!(!frame.contains("so far"), "{frame}");
    insta::assert_snapshot!(frame);
}
