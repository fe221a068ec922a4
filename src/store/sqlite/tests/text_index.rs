//! The read model's trigram index of `err:` and free text: it finds
//! exactly what the walk over every row finds (same case rules, same
//! columns), the planner reads its candidates for a rare word, a common
//! word and a term too short for trigrams are left to the walk, and what
//! a service writes afterwards is found once caught up.

use super::{Ledger, adopted, insert_attempt, insert_op, now};
use crate::query::Query;
use crate::store::backend::Reads as _;
use rusqlite::params_from_iter;

use crate::domain::Seek;
use crate::store::sql::TextTerm;
use crate::store::sqlite::reads::DERIVED;

/// Every match of `filter`, newest first: through whatever the backend
/// chooses, and by the walk alone (the dialect with no term indexed).
fn both_ways(ledger: &Ledger, filter: &str) -> (Vec<i64>, Vec<i64>) {
    let query = Query::parse(filter).unwrap();
    let mut chosen = Vec::new();
    ledger
        .for_each_row(&query, now(), &mut |r| {
            chosen.push(r.id.0);
            Ok(())
        })
        .unwrap();
    let statement = crate::store::filter::page_sql(
        &DERIVED,
        &query,
        Default::default(),
        Seek::First,
        None,
        now(),
    )
    .0;
    let walked = ledger
        .operation_rows(&statement)
        .unwrap()
        .iter()
        .map(|r| r.id.0)
        .collect();
    (chosen, walked)
}

fn indexed(ledger: &Ledger, filter: &str) -> Vec<(TextTerm, String)> {
    crate::store::sqlite::reads::indexed_terms(ledger, &Query::parse(filter).unwrap()).unwrap()
}

#[test]
fn the_index_finds_what_the_walk_finds_with_the_same_case_rules() {
    let (_dir, ledger, service) = adopted(60);
    insert_op(&service, 61, "acct-Émile", "k-Rare-Key", "unknown", None);
    insert_attempt(&service, 61, 1, Some("Upstream SAID 100% NO_way"));
    insert_attempt(&service, 7, 3, Some("upstream said 100% no_way"));
    insert_attempt(&service, 8, 3, Some("upstream said 100x noXway"));
    insert_attempt(&service, 9, 3, Some("UPSTREAM SAİD 100% NO_WAY"));
    for filter in [
        "err:\"said 100% no_way\"",
        "err:SAID",
        "err:said",
        "err:noXway",
        "err:\"100%\"",
        "err:sa",
        "rare-key",
        "RARE",
        "émile",
        "Émile",
        "err:nothing-like-this",
        "acct-1",
        "err:timeout",
        "\"k-\0x\"",
        "\"a\"\"b\"",
    ] {
        let (chosen, walked) = both_ways(&ledger, filter);
        assert_eq!(chosen, walked, "{filter}");
    }
    // LIKE folds ASCII only: `İ` is not `I`, and the index, which folds
    // more, must not let that row in.
    assert_eq!(both_ways(&ledger, "err:said").0, [61, 8, 7]);
    assert_eq!(both_ways(&ledger, "err:\"100% no_way\"").0, [61, 9, 7]);
    assert_eq!(both_ways(&ledger, "émile").0, Vec::<i64>::new());
    assert_eq!(both_ways(&ledger, "Émile").0, [61]);
    // Rare words go through the index; a short one cannot.
    // Free text is not in the index: only the err: term is.
    assert_eq!(indexed(&ledger, "err:said rare-key").len(), 1);
    assert!(indexed(&ledger, "err:sa").is_empty());
}

#[test]
fn a_rare_word_reads_its_candidates_and_a_common_one_walks() {
    let (_dir, ledger, service) = adopted(10);
    insert_attempt(&service, 4, 2, Some("vault sealed"));
    let plan = |filter: &str| {
        let query = Query::parse(filter).unwrap();
        let (sql, values, _) =
            ledger.page_sql(&query, Default::default(), Seek::First, Some(50), now());
        let mut stmt = ledger
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let lines = stmt
            .query_map(params_from_iter(values), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        lines.join("\n")
    };
    let rare = plan("err:sealed");
    assert!(rare.contains("settle_error_ops"), "{rare}");
    assert!(!rare.contains("SCAN o"), "{rare}");
    // Twenty thousand operations failed alike: a walk finds a page of
    // them at once.
    service
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 11 UNION ALL SELECT i + 1 FROM n WHERE i < 20010)
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
                 SELECT i, 'acct', 'charge', 'k-' || i, 'fp', 'unknown', 3, 't', 't' FROM n;
             INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
                 SELECT id, 1, 't', 'error', 'upstream busy' FROM operations WHERE id > 10;",
        )
        .unwrap();
    let common = plan("err:busy");
    assert!(!common.contains("settle_error_ops"), "{common}");
}

#[test]
fn what_a_service_writes_later_is_found_once_caught_up() {
    let (_dir, ledger, service) = adopted(10);
    assert!(both_ways(&ledger, "err:kraken").0.is_empty());
    insert_op(&service, 11, "acct-new", "k-new", "unknown", None);
    insert_attempt(&service, 11, 1, Some("kraken released"));
    // An error written in place, as a service finishes an attempt.
    service
        .execute(
            "UPDATE attempts SET error = 'kraken again' WHERE op_id = 3 AND attempt = 1",
            [],
        )
        .unwrap();
    service
        .execute(
            "INSERT INTO events (op_id, at, event) VALUES (3, '2026-01-01T00:00:00Z', 'failed')",
            [],
        )
        .unwrap();
    assert_eq!(indexed(&ledger, "err:kraken").len(), 1);
    assert_eq!(both_ways(&ledger, "err:kraken"), (vec![11, 3], vec![11, 3]));
    // Its old error is forgotten.
    assert!(!both_ways(&ledger, "err:\"timeout after\"").0.contains(&3));
}
