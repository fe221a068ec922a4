//! The header's counts per state at the widths operators use: whole
//! "state n" groups, the queue's states first, and "+k more" for those
//! left out, never a word cut at the edge.

use super::{frame, sized};

/// The line of tabs and counts, after the tabs' separator.
fn counts_at(width: u16) -> String {
    let h = sized(width, 24);
    let frame = frame(&h);
    let line = frame.lines().nth(1).unwrap_or_default().to_string();
    line.split_once('│')
        .map(|(_, counts)| counts.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn every_count_shown_is_whole_and_the_rest_are_counted() {
    // The fixture holds unknown 2, exhausted 1, conflict 1, reserved 2
    // (1 stale), completed 1.
    let all = "unknown 2 exhausted 1 conflict 1 reserved 2 (stale 1) completed 1";
    assert_eq!(counts_at(200), all);
    // At 60 columns the tabs take the line: no count, not a cut one.
    assert_eq!(counts_at(60), "");
    for width in [80, 100, 120] {
        let counts = counts_at(width);
        let (shown, more) = match counts.rsplit_once(" +") {
            Some((shown, more)) => (shown.to_string(), Some(more.to_string())),
            None => (counts.clone(), None),
        };
        assert!(all.starts_with(&shown), "{width} columns: {counts:?}");
        let left = all[shown.len()..]
            .split(|c: char| c.is_ascii_digit() || c == '(' || c == ')')
            .filter(|w| !w.trim().is_empty() && w.trim() != "stale")
            .count();
        match more {
            Some(more) => assert_eq!(more, format!("{left} more"), "{width}: {counts:?}"),
            None => assert_eq!(shown, all, "{width} columns: {counts:?}"),
        }
    }
    assert!(
        counts_at(80).starts_with("unknown"),
        "the queue's states first"
    );
}
