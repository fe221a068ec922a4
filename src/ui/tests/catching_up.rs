//! The header while the read model catches up with what was written while
//! nobody watched: the console draws what the model holds and says
//! "catching up n/N", which goes once it is current; and a text term too
//! short for the trigram index is scanned, the status line saying why.

use super::{frame, sized};
use crate::app::Msg;
use crate::app::effect::{Effect, Read};
use crate::domain::{CatchUp, TextSearch};
use crate::store::ScanPlace;

#[test]
fn catching_up_in_the_header_80x24() {
    let mut h = sized(80, 24);
    h.receive(Msg::CatchingUp(Some(CatchUp {
        done: 35_000,
        total: 812_000,
    })));
    let shown = frame(&h);
    assert!(shown.contains("catching up 35,000/812,000"), "{shown}");
    insta::assert_snapshot!(shown);
    // Caught up: the words go and what is on screen is read again.
    let effects = h.receive(Msg::CatchingUp(None));
    assert!(!frame(&h).contains("catching up"));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Read(Read::LoadPage { .. }))),
        "{effects:?}"
    );
}

#[test]
fn a_text_term_too_short_for_trigrams_is_scanned_80x24() {
    let mut h = sized(80, 24);
    h.app.reading.text_search = TextSearch::Trigram;
    h.keys("/");
    h.type_text("err:be");
    h.keys("enter");
    let Some(scan) = h.app.queue.scan.as_mut() else {
        panic!("not scanned");
    };
    scan.place = Some(ScanPlace {
        low: 1,
        high: 1_000_000,
        next: 800_001,
    });
    h.app.status = None;
    let shown = frame(&h);
    assert!(
        shown.contains("err: under 3 chars have no index"),
        "{shown}"
    );
    // Three characters: through the index, no scan.
    h.keys("/");
    h.type_text("t");
    h.keys("enter");
    assert!(h.app.queue.scan.is_none());
    // Free text is not in the index: scanned, whatever its length.
    h.keys("/");
    for _ in "err:bet".chars() {
        h.keys("backspace");
    }
    h.type_text("acct-0042");
    h.keys("enter");
    assert!(h.app.queue.scan.is_some(), "free text is scanned");
}

#[test]
fn a_scan_while_the_read_model_is_built_says_the_indexes_are_coming() {
    let mut h = sized(120, 24);
    h.receive(Msg::FiltersScan(true));
    h.receive(Msg::Adopting(crate::store::Progress {
        step: "copying operations (1 of 10)".to_string(),
        done: 8,
        total: 30,
    }));
    h.keys("/");
    h.type_text("err:timeout");
    h.keys("enter");
    let Some(scan) = h.app.queue.scan.as_mut() else {
        panic!("not scanned");
    };
    scan.place = Some(ScanPlace {
        low: 1,
        high: 1_000_000,
        next: 800_001,
    });
    h.app.status = None;
    let shown = frame(&h);
    assert!(
        shown.contains("the indexes come with the read model being built"),
        "{shown}"
    );
}
