//! A filter on a ledger without indexes for it: read a slice of ids at a
//! time, the old rows gone at once, the count the scan's, the scan going
//! on where it stopped and given up when the filter changes.

use crate::app::scan::ListScan;
use crate::app::testkit::Harness;
use crate::app::*;
use crate::store::ScanPlace;

/// The fixture's console, told its ledger has no index for filters.
fn scanning() -> Harness {
    let mut h = Harness::new();
    h.receive(Msg::FiltersScan(true));
    h
}

/// The scan reads each effect asks for, with where it starts.
fn scan_reads(effects: &[Effect]) -> Vec<ScanRead> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Read(Read::LoadPage { source, .. }) => match **source {
                PageSource::Scan { read, .. } => Some(read),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn accounts(h: &Harness) -> Vec<String> {
    let rows = &h.app.queue.window.rows;
    rows.iter().map(|r| r.account.clone()).collect()
}

/// A scan the fixture's ledger is far too small for: a million ids, a
/// fifth of them read.
fn midway() -> ScanPlace {
    ScanPlace {
        low: 1,
        high: 1_000_000,
        next: 800_001,
    }
}

#[test]
fn a_new_filter_takes_the_old_rows_away_at_once_and_scans() {
    let mut h = scanning();
    assert!(accounts(&h).iter().any(|a| a != "beta"));
    h.keys("/");
    let held = update(&mut h.app, Intent::Input('b'));
    assert!(h.app.queue.window.rows.is_empty(), "rows of the old filter");
    assert_eq!(scan_reads(&held), [ScanRead::Step(None)]);
    assert!(
        !held.iter().any(|e| matches!(e, Effect::Count(_))),
        "a scanned filter is counted by its scan: {held:?}"
    );
    // Nor does a reread count it: the counter counts the other list.
    let reread = update(&mut h.app, Intent::Reload);
    let counted = reread.iter().find_map(|e| match e {
        Effect::Count(Count::Lists(lists)) => Some(lists.clone()),
        _ => None,
    });
    assert!(counted.is_some_and(|lists| lists.iter().all(|(id, _)| *id != ListId::Queue)));
    h.settle(held);
    h.type_text("eta");
    assert!(!accounts(&h).is_empty());
    assert!(
        accounts(&h).iter().all(|a| a == "beta"),
        "{:?}",
        accounts(&h)
    );
    let scan = h.app.queue.scan.unwrap();
    assert!(scan.done(), "one slice reads the fixture whole");
    assert_eq!(scan.found as usize, accounts(&h).len());
    assert_eq!(h.app.queue.count_text(""), Some(scan.found.to_string()));
}

#[test]
fn paging_past_the_rows_found_goes_on_from_where_the_scan_stopped() {
    let mut h = scanning();
    h.keys("/");
    h.type_text("beta");
    h.app.queue.scan = Some(ListScan {
        place: Some(midway()),
        found: 2,
        ..ListScan::default()
    });
    h.app.queue.window.at_end = false;
    let asked = update(&mut h.app, Intent::Last);
    assert_eq!(scan_reads(&asked), [ScanRead::Step(Some(midway()))]);
    assert_eq!(h.app.queue.count_text(""), Some("≥2".to_string()));
    // Another process commits while that slice is read: the rows held are
    // reread, and the slice is left to finish rather than asked again.
    let reread = update(&mut h.app, Intent::Reload);
    let reads = scan_reads(&reread);
    assert!(matches!(reads[..], [ScanRead::Reread(..)]), "{reads:?}");
}

#[test]
fn a_slice_for_an_older_filter_or_from_a_place_left_is_dropped() {
    let mut h = scanning();
    h.keys("/");
    let old = update(&mut h.app, Intent::Input('b'));
    let newer = update(&mut h.app, Intent::Input('z'));
    for effect in old {
        for msg in h.perform(effect) {
            h.receive(msg);
        }
    }
    assert!(h.app.queue.window.rows.is_empty(), "bz matches nothing");
    h.settle(newer);
    assert!(h.app.queue.window.rows.is_empty());
    assert!(h.app.queue.scan.unwrap().done());

    // A slice from where the scan no longer is was read twice.
    let found = h.app.queue.scan.unwrap().found;
    let ticket = h.app.queue.window.generation;
    h.receive(Msg::PageLoaded {
        ticket,
        fetch: window::Fetch::First,
        merge: window::Merge::Append,
        limit: window::PAGE,
        rows: PageRows::Scanned {
            list: ListId::Queue,
            rows: Vec::new(),
            read: ScanRead::Step(Some(midway())),
            place: Some(ScanPlace {
                next: 1,
                ..midway()
            }),
        },
    });
    assert_eq!(h.app.queue.scan.unwrap().found, found);
}

#[test]
fn once_the_ledger_has_its_indexes_a_scanned_filter_is_read_the_indexed_way() {
    let mut h = scanning();
    h.keys("/");
    h.type_text("beta");
    assert!(h.app.queue.scan.is_some());
    let asked = h.receive(Msg::FiltersScan(false));
    assert!(h.app.queue.scan.is_none());
    assert!(scan_reads(&asked).is_empty());
    assert!(asked.iter().any(|e| matches!(
        e,
        Effect::Read(Read::LoadPage { source, .. })
            if matches!(**source, PageSource::Operations { .. })
    )));
    assert!(accounts(&h).iter().all(|a| a == "beta"));
    assert!(h.app.queue.count.is_some(), "counted by the counter again");
}

#[test]
fn another_process_writing_rereads_only_the_ids_the_rows_span() {
    let mut h = scanning();
    h.keys("/");
    h.type_text("beta");
    let rows = &h.app.queue.window.rows;
    let oldest = rows[rows.len() - 1].id.0;
    let asked = update(&mut h.app, Intent::Reload);
    // The newest rows are shown: the ids added since are read too.
    assert_eq!(scan_reads(&asked), [ScanRead::Reread(oldest - 1, i64::MAX)]);
    h.settle(asked);
    assert!(accounts(&h).iter().all(|a| a == "beta"));
}
