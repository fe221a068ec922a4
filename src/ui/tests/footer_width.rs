//! The Queue's footer at the widths operators use: the most used keys
//! first, every hint whole, and `?` always last, since help lists every
//! key the footer had no room for.

use super::frame;
use crate::app::Msg;
use crate::app::testkit::Harness;

/// The footer line of the Queue at `width` columns.
fn queue_footer(width: u16) -> String {
    let mut h = Harness::new();
    h.receive(Msg::Resize(width, 24));
    frame(&h).lines().last().unwrap_or_default().to_string()
}

/// Every hint the footer can show on the Queue, read-write, whole.
const HINTS: [&str; 14] = [
    "enter detail",
    "/ filter",
    "a applied",
    "n not applied",
    "r retry",
    "space mark",
    "c cancel retry",
    "u undo",
    "p probe",
    "e export",
    "s sort",
    "D drill",
    "ctrl-c quit",
    "? help",
];

/// The footer is whole hints, two spaces apart, ending in `?`.
fn assert_whole_hints(footer: &str, width: u16) {
    assert!(footer.chars().count() <= usize::from(width), "{footer}");
    let hints: Vec<&str> = footer.split("  ").collect();
    let last = hints.last().copied().unwrap_or_default();
    assert!(last == "? help" || last == "? more", "{width}: {footer}");
    for hint in &hints[..hints.len() - 1] {
        assert!(
            HINTS.contains(hint),
            "{width}: cut hint {hint:?} in {footer}"
        );
    }
    // Ranked: the hints shown are the first ones, in order.
    let shown = &hints[..hints.len() - 1];
    assert_eq!(shown, &HINTS[..shown.len()], "{width}: {footer}");
}

#[test]
fn queue_footer_at_60_columns() {
    let footer = queue_footer(60);
    assert_whole_hints(&footer, 60);
    assert!(footer.ends_with("? more"), "{footer}");
    insta::assert_snapshot!(footer);
}

#[test]
fn queue_footer_at_80_columns_ends_in_a_whole_hint_and_shows_help() {
    let footer = queue_footer(80);
    assert_whole_hints(&footer, 80);
    assert!(footer.contains("a applied") && footer.contains("space mark"));
    insta::assert_snapshot!(footer);
}

#[test]
fn queue_footer_at_120_columns_offers_probe_and_export() {
    let footer = queue_footer(120);
    assert_whole_hints(&footer, 120);
    assert!(
        footer.contains("p probe") && footer.contains("e export"),
        "{footer}"
    );
    insta::assert_snapshot!(footer);
}

#[test]
fn everything_fits_at_160_columns_and_help_says_help() {
    let footer = queue_footer(160);
    assert_whole_hints(&footer, 160);
    assert!(
        footer.contains("ctrl-c quit") && footer.ends_with("? help"),
        "{footer}"
    );
}
