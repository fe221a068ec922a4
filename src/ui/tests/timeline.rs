//! The time drawn: the Clusters view's chart of when the queue's
//! operations got stuck (their last attempt), on the fixture's fixed clock (the axis in UTC
//! under test, the operator's zone otherwise).

use super::{frame, sized};

#[test]
fn clusters_chart_120x40() {
    let mut h = sized(120, 40);
    h.keys("5");
    let frame = frame(&h);
    assert!(
        frame.contains("when they got stuck (last attempt)"),
        "{frame}"
    );
    assert!(frame.contains("create_report"), "{frame}");
    insta::assert_snapshot!(frame);
}

/// The header's sparkline: the queue counted every five minutes for an
/// hour while it grew, drawn at the right end of the first line.
#[test]
fn header_sparkline_of_the_queue_120x24() {
    let mut h = sized(120, 24);
    let counts = h.app.counts.clone().unwrap();
    let start = h.app.now;
    for step in 0..=12 {
        h.receive(crate::app::Msg::Tick(
            start + chrono::Duration::minutes(5 * step),
        ));
        let query = crate::query::Query::queue();
        let lists = vec![(crate::app::ListId::Queue, query, 5 + step * step)];
        h.receive(crate::app::Msg::CountsLoaded {
            counts: counts.clone(),
            lists,
        });
    }
    let frame = frame(&h);
    let header = frame.lines().next().unwrap();
    assert!(header.contains("queue, last hour"), "{header}");
    insta::assert_snapshot!(frame);
}

/// A size known for less than a minute is no trend: the header stays as
/// it was.
#[test]
fn no_sparkline_before_a_minute_of_counts() {
    let mut h = sized(120, 24);
    h.keys("5 1");
    assert!(h.app.queue_history.known_for(h.app.now) < chrono::Duration::minutes(1));
    assert!(!frame(&h).contains("queue, last hour"));
}
