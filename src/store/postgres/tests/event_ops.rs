//! Each operation's events through settle's own table, on a real
//! PostgreSQL: adoption leaves the service's tables with only the indexes
//! the service made, an event written above the mark shows in the detail
//! and as the list's last event, and a schema-3 ledger loses its index on
//! `events` and keeps every event on screen.

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use postgres::Client;

use super::testing::{connect, fresh_database};
use crate::domain::{OperationId, Seek};
use crate::query::Query;
use crate::store::postgres::schema::queue::catch_up;
use crate::store::postgres::schema::{SCHEMA_VERSION, SERVICE_TABLES};
use crate::store::{Access, Ledger};

fn scalar_i64(c: &mut Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
}

/// The indexes and triggers on the service's tables, by name.
fn service_objects(c: &mut Client) -> Vec<String> {
    c.query(
        "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid IN ('operations'::regclass, 'attempts'::regclass, 'events'::regclass)
         UNION ALL
         SELECT tgname::text FROM pg_trigger WHERE NOT tgisinternal
          AND tgrelid IN ('operations'::regclass, 'attempts'::regclass, 'events'::regclass)
         ORDER BY 1",
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Two operations with two events each, written as a service writes them.
const ROWS: &str = "
INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, now(), now()),
       ('acme', 'charge', 'k-2', 'fp', 'unknown', 3, now(), now());
INSERT INTO events (op_id, at, event) VALUES
    (1, now(), 'started'), (2, now(), 'started'), (1, now(), 'timeout'), (2, now(), 'failed');";

/// The catch-up's rounds, with no wait between them, until the event mark
/// passes every event there is.
fn catch_up_fully(c: &mut Client) {
    let newest = scalar_i64(c, "SELECT max(id) FROM events");
    let until = Instant::now() + Duration::from_secs(20);
    while scalar_i64(c, "SELECT event_mark FROM settle_queue_mark") < newest {
        catch_up(c, Duration::ZERO, 0).unwrap();
        assert!(Instant::now() < until, "the event mark never moved");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn events_of(ledger: &Ledger, op: i64) -> Vec<String> {
    let detail = ledger.detail(OperationId(op)).unwrap();
    detail.events.into_iter().map(|e| e.event).collect()
}

fn last_events(ledger: &Ledger) -> Vec<(i64, Option<String>)> {
    let rows = ledger
        .page(&Query::default(), Seek::First, 10, Utc::now())
        .unwrap();
    let mut rows: Vec<_> = rows.into_iter().map(|r| (r.id.0, r.last_event)).collect();
    rows.sort();
    rows
}

#[test]
fn adoption_leaves_the_service_tables_only_the_indexes_the_service_made() {
    let Some(db) = fresh_database("no settle index") else {
        return;
    };
    let mut c = connect(&db);
    c.batch_execute(SERVICE_TABLES).unwrap();
    c.batch_execute(ROWS).unwrap();
    let before = service_objects(&mut c);
    let (ledger, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(report.upgraded.is_some());
    assert_eq!(service_objects(&mut c), before);
    // Filled at adoption: every event up to the mark is in the table.
    assert_eq!(
        scalar_i64(
            &mut c,
            "SELECT count(*) FROM events e WHERE e.id <= (SELECT event_mark FROM settle_queue_mark)
               AND NOT EXISTS (SELECT 1 FROM settle_event_ops m WHERE m.op_id = e.op_id AND m.id = e.id)"
        ),
        0
    );
    assert_eq!(events_of(&ledger, 1), ["started", "timeout"]);
    assert_eq!(
        last_events(&ledger),
        [(1, Some("timeout".into())), (2, Some("failed".into()))]
    );
}

#[test]
fn an_event_written_above_the_mark_shows_in_the_detail_and_as_last_event() {
    let Some(db) = fresh_database("events above the mark") else {
        return;
    };
    let ledger = Ledger::create(&db).unwrap();
    let mut c = connect(&db);
    c.batch_execute(ROWS).unwrap();
    catch_up_fully(&mut c);
    assert_eq!(
        scalar_i64(&mut c, "SELECT count(*) FROM settle_event_ops"),
        4
    );
    // Above the mark: in the service's table only.
    c.batch_execute("INSERT INTO events (op_id, at, event) VALUES (1, now(), 'completed')")
        .unwrap();
    assert_eq!(
        scalar_i64(&mut c, "SELECT count(*) FROM settle_event_ops"),
        4
    );
    assert_eq!(events_of(&ledger, 1), ["started", "timeout", "completed"]);
    assert_eq!(events_of(&ledger, 2), ["started", "failed"]);
    assert_eq!(
        last_events(&ledger),
        [(1, Some("completed".into())), (2, Some("failed".into()))]
    );
    // The catch-up records it, and the reads stay the same.
    catch_up_fully(&mut c);
    assert_eq!(
        scalar_i64(&mut c, "SELECT count(*) FROM settle_event_ops"),
        5
    );
    assert_eq!(events_of(&ledger, 1), ["started", "timeout", "completed"]);
    assert_eq!(last_events(&ledger)[0], (1, Some("completed".into())));
}

/// A ledger as settle's schema 3 left it: events found through
/// `settle_events_op` on the service's `events`, no table of its own.
fn schema_three_ledger(hint: &str) -> Option<std::path::PathBuf> {
    let db = fresh_database(hint)?;
    drop(Ledger::create(&db).unwrap());
    let mut c = connect(&db);
    c.batch_execute(ROWS).unwrap();
    catch_up_fully(&mut c);
    c.batch_execute(
        "DROP TABLE settle_event_ops;
         ALTER TABLE settle_queue_mark DROP COLUMN event_map, DROP COLUMN fill_end;
         CREATE INDEX settle_events_op ON events (op_id, id);
         UPDATE settle_schema SET version = 3;
         INSERT INTO events (op_id, at, event) VALUES (2, now(), 'retried');
         INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
         VALUES (1, 'note', 'unknown', 'unknown', 'ana', now(), 0);",
    )
    .unwrap();
    Some(db)
}

fn has_index(db: &Path, name: &str) -> bool {
    scalar_i64(
        &mut connect(db),
        &format!("SELECT count(*) FROM pg_indexes WHERE indexname = '{name}'"),
    ) == 1
}

#[test]
fn a_schema_three_ledger_loses_its_index_on_events_and_keeps_every_event() {
    let Some(db) = schema_three_ledger("events from schema 3") else {
        return;
    };
    let (look, report) = Ledger::open(&db, Access::ReadOnly).unwrap();
    assert!(report.not_adopted.is_some(), "{report:?}");
    // A look reads through the old index, and changes nothing.
    assert_eq!(events_of(&look, 2), ["started", "failed", "retried"]);
    assert_eq!(last_events(&look)[1], (2, Some("retried".into())));
    drop(look);
    assert!(has_index(&db, "settle_events_op"));
    let (ledger, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let line = report.upgraded.unwrap();
    assert!(
        line.contains(&format!("(schema 3 -> {SCHEMA_VERSION})"))
            && line.contains("dropped settle_events_op from the service's tables")
            && line.ends_with("no service rows changed"),
        "{line}"
    );
    assert!(!has_index(&db, "settle_events_op"));
    let mut c = connect(&db);
    for (table, n) in [("operations", 2), ("events", 5), ("decisions", 1)] {
        assert_eq!(
            scalar_i64(&mut c, &format!("SELECT count(*) FROM {table}")),
            n,
            "{table}"
        );
    }
    assert_eq!(events_of(&ledger, 1), ["started", "timeout"]);
    assert_eq!(events_of(&ledger, 2), ["started", "failed", "retried"]);
    assert_eq!(
        last_events(&ledger),
        [(1, Some("timeout".into())), (2, Some("retried".into()))]
    );
    assert_eq!(ledger.detail(OperationId(1)).unwrap().decisions.len(), 1);
}

/// The marks' row as adoption makes it on a service's database with
/// 12,000 events over two operations: the fill is to end 10,000 below the
/// newest ([`crate::store::postgres::schema::queue::first_mark`]).
fn marked_service_ledger(hint: &str) -> Option<(std::path::PathBuf, Client)> {
    let db = fresh_database(hint)?;
    let mut c = connect(&db);
    c.batch_execute(SERVICE_TABLES).unwrap();
    c.batch_execute(ROWS).unwrap();
    c.batch_execute(
        "INSERT INTO events (op_id, at, event)
             SELECT 1 + i % 2, now(), 'poll' FROM generate_series(1, 11996) i",
    )
    .unwrap();
    c.batch_execute(&format!(
        "{}\n{}\n{};",
        crate::store::postgres::schema::queue::QUEUE_TABLES,
        crate::store::postgres::schema::event_ops::EVENT_TABLES,
        crate::store::postgres::schema::queue::first_mark()
    ))
    .unwrap();
    Some((db, c))
}

/// Every event with an operation is in the table once, and reads use it.
fn assert_whole(c: &mut Client) {
    assert_eq!(
        scalar_i64(c, "SELECT count(*) FROM settle_event_ops"),
        scalar_i64(c, "SELECT count(*) FROM events WHERE op_id IS NOT NULL")
    );
    assert!(
        c.query_one(crate::store::postgres::schema::event_ops::IS_WHOLE, &[])
            .unwrap()
            .get::<_, bool>(0)
    );
}

/// The catch-up records the events above the mark the fill ends at while
/// the fill runs; the fill's plain inserts (a unique key's error, were
/// one of them there) then meet no row it recorded, and the fill ends at
/// the catch-up's mark.
#[test]
fn the_fill_ends_where_the_catch_up_began_and_meets_none_of_its_rows() {
    let Some((_db, mut c)) = marked_service_ledger("fill meets the catch-up") else {
        return;
    };
    assert_eq!(
        scalar_i64(&mut c, "SELECT fill_end FROM settle_queue_mark"),
        2_000
    );
    catch_up_fully(&mut c);
    assert!(scalar_i64(&mut c, "SELECT count(*) FROM settle_event_ops") >= 10_000);
    crate::store::postgres::schema::event_ops::fill(&mut c, &mut |_| {}).unwrap();
    assert_whole(&mut c);
    assert_eq!(
        scalar_i64(
            &mut c,
            "SELECT event_map - event_mark FROM settle_queue_mark"
        ),
        0
    );
}

/// A marks' row older than `fill_end` may hold rows the catch-up
/// recorded below the mark: its fill passes over them.
#[test]
fn a_fill_begun_before_its_end_was_kept_passes_over_the_catch_ups_rows() {
    let Some((_db, mut c)) = marked_service_ledger("fill without its end") else {
        return;
    };
    c.batch_execute("UPDATE settle_queue_mark SET fill_end = NULL")
        .unwrap();
    catch_up_fully(&mut c);
    // The catch-up's rows above the old mark, and the fill's first batch
    // began under it before the mark moved.
    c.batch_execute(
        "INSERT INTO settle_event_ops (op_id, id)
             SELECT op_id, id FROM events WHERE id <= 100 AND op_id IS NOT NULL;
         UPDATE settle_queue_mark SET event_map = 100",
    )
    .unwrap();
    crate::store::postgres::schema::event_ops::fill(&mut c, &mut |_| {}).unwrap();
    assert_whole(&mut c);
}
