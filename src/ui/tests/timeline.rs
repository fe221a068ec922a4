//! The time drawn: the Clusters view's chart of when the queue's
//! operations last changed, on the fixture's fixed clock (the axis in UTC
//! under test, the operator's zone otherwise).

use super::{frame, sized};

#[test]
fn clusters_chart_120x40() {
    let mut h = sized(120, 40);
    h.keys("5");
    let frame = frame(&h);
    assert!(frame.contains("when they last changed"), "{frame}");
    assert!(frame.contains("create_report"), "{frame}");
    insta::assert_snapshot!(frame);
}
