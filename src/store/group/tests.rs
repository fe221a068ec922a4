//! A group of real SQLite ledgers read and written through the store:
//! pages merged in one order with every row once, counts added up, a
//! decision written in its row's own ledger, and a member that cannot be
//! opened left out and named.

use std::path::{Path, PathBuf};

use super::{MemberSpec, declare, open};
use crate::domain::{DecisionDraft, DecisionKind, OperationRow, Seek, Sort, State};
use crate::query::Query;
use crate::store::parity::{now, op};
use crate::store::{Access, Ledger};

fn ledger(dir: &Path, name: &str, n: usize) -> PathBuf {
    let path = dir.join(format!("{name}.db"));
    let mut ledger = Ledger::create(&path).unwrap();
    let ops: Vec<_> = (1..=n)
        .map(|i| op(&format!("{name}-{i}"), "pay", State::Unknown))
        .collect();
    ledger.import(&ops, &[]).unwrap();
    path
}

fn group(name: &str, members: &[(&str, &Path)]) -> Ledger {
    let specs = members
        .iter()
        .map(|(name, address)| MemberSpec {
            name: name.to_string(),
            address: address.to_path_buf(),
            writes_refused: None,
        })
        .collect();
    open(&declare(name, specs), Access::ReadWrite).unwrap().0
}

fn named(rows: &[OperationRow]) -> Vec<String> {
    rows.iter()
        .map(|r| r.origin.as_ref().unwrap().to_string())
        .collect()
}

#[test]
fn pages_merge_every_ledgers_rows_once_in_one_order_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let (pay, ship) = (ledger(dir.path(), "pay", 5), ledger(dir.path(), "ship", 3));
    let g = group("merged", &[("pay", &pay), ("ship", &ship)]);
    let (sort, q) = (Sort::default(), Query::default());
    let mut seen = Vec::new();
    let mut seek = Seek::First;
    loop {
        let page = g.sorted_page(&q, sort, seek, 3, now()).unwrap();
        let Some(last) = page.last() else { break };
        seek = Seek::After(sort.key_of(last));
        seen.extend(page);
    }
    let want = [
        "pay:5", "pay:4", "ship:3", "pay:3", "ship:2", "pay:2", "ship:1", "pay:1",
    ];
    assert_eq!(named(&seen), want);
    // Back from the end: the rows before the last, in list order.
    let back = g
        .sorted_page(&q, sort, Seek::Before(sort.key_of(&seen[7])), 3, now())
        .unwrap();
    assert_eq!(named(&back), ["ship:2", "pay:2", "ship:1"]);
    let last = g.sorted_page(&q, sort, Seek::Last, 2, now()).unwrap();
    assert_eq!(named(&last), ["ship:1", "pay:1"]);
    assert_eq!(g.count(&q, now()).unwrap(), 8);
    let ship_only = Query::parse("ledger:ship").unwrap();
    assert_eq!(g.count(&ship_only, now()).unwrap(), 3);
    let counts = g.state_counts(now()).unwrap();
    assert_eq!(counts.get(&State::Unknown), 8);
}

#[test]
fn a_decision_is_written_in_its_rows_own_ledger_only() {
    let dir = tempfile::tempdir().unwrap();
    let (pay, ship) = (ledger(dir.path(), "pay", 2), ledger(dir.path(), "ship", 2));
    let mut g = group("deciding", &[("pay", &pay), ("ship", &ship)]);
    let rows = g
        .sorted_page(
            &Query::parse("ledger:ship").unwrap(),
            Sort::default(),
            Seek::First,
            1,
            now(),
        )
        .unwrap();
    let row = &rows[0];
    assert_eq!(row.origin.as_ref().unwrap().to_string(), "ship:2");
    let detail = g.detail(row.id).unwrap();
    assert_eq!(detail.operation.idem_key, "ship-2");
    let receipt = g
        .record_decision(
            &DecisionDraft {
                op_id: row.id,
                kind: DecisionKind::NotApplied,
                result_id: None,
                evidence: Some("no charge at the provider".into()),
                note: None,
                override_committed: false,
                operator: "ann".into(),
                expected_version: row.version,
                undoes: None,
            },
            now(),
        )
        .unwrap();
    assert_eq!(receipt.op_id, row.id);
    let decided = |path: &Path| -> Vec<i64> {
        let conn = rusqlite::Connection::open(path).unwrap();
        let mut stmt = conn.prepare("SELECT op_id FROM decisions").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!((decided(&pay), decided(&ship)), (vec![], vec![2]));
}

#[test]
fn a_member_that_cannot_be_opened_is_left_out_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let pay = ledger(dir.path(), "pay", 2);
    let gone = dir.path().join("gone.db");
    let g = group("one gone", &[("pay", &pay), ("gone", &gone)]);
    let rows = g
        .sorted_page(&Query::default(), Sort::default(), Seek::First, 10, now())
        .unwrap();
    assert_eq!(named(&rows), ["pay:2", "pay:1"]);
    let members = g.members();
    assert_eq!(members[0].down, None);
    let down = members[1].down.as_deref().unwrap_or_default();
    assert!(down.contains("gone.db"), "{down}");
    // Asked for that member alone, the group says why it has nothing.
    let e = g
        .count(&Query::parse("ledger:gone").unwrap(), now())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("gone") && e.contains("could not be opened"),
        "{e}"
    );
}
