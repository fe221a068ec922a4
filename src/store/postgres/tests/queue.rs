//! The queue's table on a real PostgreSQL: an operation moved into the
//! queue by an update shows (through its event, or the sweep), a member
//! that left never shows, and a transaction committing below an id the
//! catch-up already saw is never skipped.

use std::time::{Duration, Instant};

use postgres::Client;

use super::testing::{connect, fresh_database};
use crate::store::postgres::schema::queue::{SWEEP, catch_up, members_sql, queue_candidates_sql};
use crate::store::{Access, Ledger};

/// A new ledger (its tables as settle creates them) and a client on it.
fn ledger(hint: &str) -> Option<(std::path::PathBuf, Client)> {
    let db = fresh_database(hint)?;
    drop(Ledger::create(&db).unwrap());
    let c = connect(&db);
    Some((db, c))
}

fn insert(c: &mut impl postgres::GenericClient, key: &str, state: &str) -> i64 {
    c.query_one(
        "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
             max_attempts, created_at, updated_at)
         VALUES ('acme', 'charge', $1, 'fp', $2, 3, now(), now()) RETURNING id",
        &[&key, &state],
    )
    .unwrap()
    .get(0)
}

/// The operations a queue read takes: in a candidate state, and a member
/// or above the mark.
fn queue_ids(c: &mut Client) -> Vec<i64> {
    let sql = format!(
        "SELECT o.id FROM operations o WHERE {} AND {} ORDER BY o.id",
        queue_candidates_sql("o.state"),
        members_sql()
    );
    c.query(&sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn marks(c: &mut Client) -> (i64, i64) {
    let row = c
        .query_one("SELECT op_mark, event_mark FROM settle_queue_mark", &[])
        .unwrap();
    (row.get(0), row.get(1))
}

fn members(c: &mut Client) -> Vec<i64> {
    c.query("SELECT id FROM settle_queue ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Rounds until the marks move (record, bound, advance), with no wait
/// between them; a transaction of a test in another database holds the
/// cluster's oldest transaction back for a moment.
fn settle(c: &mut Client, sweep: i64) {
    let until = Instant::now() + Duration::from_secs(20);
    for round in 0.. {
        catch_up(c, Duration::ZERO, sweep).unwrap();
        let waiting: bool = c
            .query_one("SELECT next_op IS NOT NULL FROM settle_queue_mark", &[])
            .unwrap()
            .get(0);
        if round >= 2 && !waiting {
            return;
        }
        assert!(Instant::now() < until, "the marks never moved");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_operation_moved_into_the_queue_by_an_update_shows_through_its_event_or_the_sweep() {
    let Some((_db, mut c)) = ledger("queue update") else {
        return;
    };
    for key in ["k-1", "k-2", "k-3"] {
        insert(&mut c, key, "completed");
    }
    settle(&mut c, 0);
    assert_eq!(marks(&mut c).0, 3, "the op mark passes every committed id");
    assert!(queue_ids(&mut c).is_empty());
    c.batch_execute(
        "BEGIN;
         UPDATE operations SET state = 'unknown', version = version + 1 WHERE id = 1;
         INSERT INTO events (op_id, at, event) VALUES (1, now(), 'timeout');
         COMMIT;
         UPDATE operations SET state = 'exhausted', version = version + 1 WHERE id = 2;",
    )
    .unwrap();
    settle(&mut c, 0);
    assert_eq!(
        queue_ids(&mut c),
        vec![1],
        "the event brings op 1 in; op 2 has no event and no sweep ran"
    );
    catch_up(&mut c, Duration::ZERO, SWEEP).unwrap();
    assert_eq!(queue_ids(&mut c), vec![1, 2], "the sweep finds op 2");
}

#[test]
fn a_member_that_left_the_queue_never_shows_and_is_pruned() {
    let Some((_db, mut c)) = ledger("queue left") else {
        return;
    };
    insert(&mut c, "k-1", "unknown");
    insert(&mut c, "k-2", "reserved");
    settle(&mut c, 0);
    assert_eq!(members(&mut c), vec![1, 2]);
    c.batch_execute("UPDATE operations SET state = 'completed' WHERE id IN (1, 2)")
        .unwrap();
    assert!(
        queue_ids(&mut c).is_empty(),
        "the read checks the real state before any catch-up"
    );
    catch_up(&mut c, Duration::ZERO, SWEEP).unwrap();
    assert_eq!(members(&mut c), vec![1, 2], "kept while just added");
    c.batch_execute("UPDATE settle_queue SET added_at = now() - interval '2 minutes'")
        .unwrap();
    catch_up(&mut c, Duration::ZERO, 1).unwrap();
    assert_eq!(members(&mut c), vec![2], "a round prunes its sweep's slice");
    catch_up(&mut c, Duration::ZERO, 1).unwrap();
    assert!(members(&mut c).is_empty(), "the next round prunes the next");
}

#[test]
fn a_transaction_committing_below_an_id_already_seen_is_never_skipped() {
    let Some((db, mut c)) = ledger("queue order") else {
        return;
    };
    let mut slow = connect(&db);
    let mut slow_tx = slow.transaction().unwrap();
    let early = insert(&mut slow_tx, "k-early", "unknown");
    let late = insert(&mut c, "k-late", "completed");
    assert!(early < late);
    for _ in 0..6 {
        catch_up(&mut c, Duration::ZERO, 0).unwrap();
    }
    assert!(
        marks(&mut c).0 < early,
        "no mark passes an id a running transaction holds"
    );
    slow_tx.commit().unwrap();
    assert_eq!(queue_ids(&mut c), vec![early]);
    settle(&mut c, 0);
    assert_eq!(marks(&mut c).0, late);
    assert_eq!(members(&mut c), vec![early]);
    assert_eq!(queue_ids(&mut c), vec![early]);
}

#[test]
fn adoption_records_the_queue_then_drops_the_queue_index() {
    let Some(db) = fresh_database("queue adoption") else {
        return;
    };
    let mut c = connect(&db);
    c.batch_execute(crate::store::postgres::schema::SERVICE_TABLES)
        .unwrap();
    for (key, state) in [
        ("k-1", "unknown"),
        ("k-2", "completed"),
        ("k-3", "conflict"),
    ] {
        insert(&mut c, key, state);
    }
    // A ledger of schema 2 kept the queue in a partial index.
    c.batch_execute(&format!(
        "CREATE INDEX settle_operations_queue ON operations (id) WHERE {}",
        queue_candidates_sql("state")
    ))
    .unwrap();
    drop(Ledger::open(&db, Access::ReadWrite).unwrap());
    assert_eq!(marks(&mut c).0, 3);
    assert_eq!(members(&mut c), vec![1, 3]);
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'settle_operations_queue'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

/// Rows of `relation` a plan read, from EXPLAIN ANALYZE's text: each
/// node on it says `rows=N loops=M`.
fn rows_read(plan: &[String], relation: &str) -> i64 {
    let on = format!(" on {relation} ");
    let number = |line: &str, word: &str| -> i64 {
        let at = line.rfind(word).unwrap() + word.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    plan.iter()
        .filter(|line| line.contains(&on))
        .map(|line| number(line, "rows=") * number(line, "loops="))
        .sum()
}

#[test]
fn a_queue_page_reads_its_own_members_not_the_whole_queue() {
    use crate::domain::{OperationId, Seek, Sort, SortKey, SortValue};
    use crate::query::Query;
    use crate::store::backend::Reads;
    use crate::store::filter::page_sql;
    use chrono::Utc;

    let Some((db, mut c)) = ledger("queue_page") else {
        return;
    };
    c.batch_execute(
        "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
             max_attempts, created_at, updated_at)
         SELECT 'acme', 'charge', 'k' || i, 'fp', CASE WHEN i % 3 = 0 THEN 'unknown' ELSE 'completed' END,
             3, now(), now() FROM generate_series(1, 6000) i;
         ANALYZE operations",
    )
    .unwrap();
    settle(&mut c, 0);
    // Above the mark: read from the operations, newest first.
    let tail: Vec<i64> = (0..3)
        .map(|i| insert(&mut c, &format!("t{i}"), "unknown"))
        .collect();
    let everything = queue_ids(&mut c);
    assert_eq!(everything.len(), 2003);

    // Page by page through the store: the same ids, newest first.
    let pg = crate::store::postgres::Pg::connect_for_test(&db, true);
    let query = Query {
        queue: true,
        ..Query::default()
    };
    let mut seen = Vec::new();
    let mut seek = Seek::First;
    loop {
        let page = pg.page(&query, seek, 150, Utc::now()).unwrap();
        let Some(last) = page.last() else { break };
        seek = Seek::After(last.id);
        seen.extend(page.iter().map(|r| r.id.0));
    }
    assert_eq!(&seen[..3], &[tail[2], tail[1], tail[0]]);
    seen.reverse();
    assert_eq!(seen, everything);

    // A page deep in the queue reads about a page of the table, where an
    // array of every member read all 2,000 of them on every page.
    let key = SortKey {
        value: SortValue::Int(everything[1000]),
        id: OperationId(everything[1000]),
    };
    let (statement, _) = page_sql(
        &crate::store::postgres::filter::PgSql::ALL,
        &query,
        Sort::default(),
        Seek::After(key),
        Some(101),
        Utc::now(),
    );
    let args = crate::store::postgres::filter::refs(&statement.args);
    let plan: Vec<String> = c
        .query(&format!("EXPLAIN ANALYZE {}", statement.sql), &args)
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let read = rows_read(&plan, "settle_queue");
    assert!(
        read <= 200,
        "read {read} members for a page of 101:\n{}",
        plan.join("\n")
    );
}

#[test]
fn every_statement_names_the_marks_as_pinning_finds_them() {
    use crate::store::postgres::filter::PgSql;
    use crate::store::postgres::schema::event_ops::{MARK as EVENT_MARK, events_of};
    use crate::store::postgres::schema::queue::{OP_MARK, members_join};
    use crate::store::sql::Dialect;
    let pinned = |sql: &str| sql.replace(OP_MARK, "1").replace(EVENT_MARK, "2");
    let mut texts: Vec<String> = PgSql::EVERY
        .iter()
        .map(|s| s.row_source().to_string())
        .collect();
    texts.push(members_sql());
    texts.push(members_join("DESC", Some(("<", "$2"))));
    texts.push(events_of("$1"));
    for text in texts {
        assert!(
            !pinned(&text).contains("settle_queue_mark"),
            "a mark spelled otherwise would run as a subquery the planner cannot see: {text}"
        );
    }
}
