//! The header says why a ledger the operator did not ask to be read-only
//! is (a failover under way: no primary reachable), and stays as it was
//! without a reason.

use super::frame;
use crate::app::LedgerAccess;
use crate::app::testkit::Harness;

#[test]
fn the_header_says_why_the_ledger_is_read_only() {
    let mut h = Harness::new();
    h.app.access = LedgerAccess::ReadOnly;
    let plain = frame(&h);
    let first = plain.lines().next().unwrap_or_default();
    assert!(
        first.contains(" READ-ONLY ") && !first.contains("READ-ONLY:"),
        "{first}"
    );
    h.app.read_only_reason = Some("no primary reachable\u{1b}[2J".into());
    let said = frame(&h);
    let first = said.lines().next().unwrap_or_default();
    assert!(first.contains("READ-ONLY: no primary reachable"), "{first}");
    assert!(!said.contains('\u{1b}'), "an escape reached the terminal");
}
