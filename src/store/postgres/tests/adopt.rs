//! Adoption that a service does not notice, on a throwaway cluster: a
//! schema-1 ledger loses its NOTIFY triggers and filter indexes and keeps
//! every row, an index
//! a failed concurrent build left INVALID is built again, and a service
//! writing during an adoption is never held up for long.

use std::path::Path;
use std::time::{Duration, Instant};

use super::testing::{connect, fresh_database};
use crate::store::postgres::schema::SCHEMA_VERSION;
use crate::store::{Access, Ledger};

fn scalar_i64(db: &Path, sql: &str) -> i64 {
    connect(db).query_one(sql, &[]).unwrap().get(0)
}

/// A ledger as settle's schema 1 left it: the change-notification
/// triggers on every ledger table, and rows a service and an operator
/// wrote.
fn schema_one_ledger(hint: &str) -> Option<std::path::PathBuf> {
    let db = fresh_database(hint)?;
    drop(Ledger::create(&db).unwrap());
    let mut sql = String::from(
        "CREATE FUNCTION settle_notify() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_notify('settle_ledger', TG_TABLE_NAME); RETURN NULL; END $$;
         UPDATE settle_schema SET version = 1;
         INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
         VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, now(), now());
         INSERT INTO events (op_id, at, event) VALUES (1, now(), 'timeout');
         INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
         VALUES (1, 'note', 'unknown', 'unknown', 'ana', now(), 0);",
    );
    for name in crate::store::postgres::schema::objects::RETIRED_INDEXES {
        sql.push_str(&format!("CREATE INDEX {name} ON operations (state, id);"));
    }
    for (name, table) in crate::store::postgres::schema::objects::RETIRED_TRIGGERS {
        sql.push_str(&format!(
            "CREATE TRIGGER {name} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
             FOR EACH STATEMENT EXECUTE FUNCTION settle_notify();"
        ));
    }
    connect(&db).batch_execute(&sql).unwrap();
    Some(db)
}

fn notify_triggers(db: &Path) -> i64 {
    scalar_i64(
        db,
        "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'settle\\_notify\\_%'",
    )
}

#[test]
fn a_schema_one_ledger_loses_its_notify_triggers_and_keeps_every_row() {
    let Some(db) = schema_one_ledger("retire notify") else {
        return;
    };
    assert_eq!(notify_triggers(&db), 5);
    let (_, look) = Ledger::open(&db, Access::ReadOnly).unwrap();
    assert!(
        look.not_adopted
            .as_deref()
            .is_some_and(|w| w.contains("drops settle's change-notification triggers")),
        "{look:?}"
    );
    assert_eq!(notify_triggers(&db), 5, "a look changes nothing");
    let (_, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let line = report.upgraded.unwrap();
    assert!(
        line.contains("(schema 1 -> 4)")
            && line.contains("dropped settle_notify_operations")
            && line.ends_with("no service rows changed"),
        "{line}"
    );
    assert_eq!(notify_triggers(&db), 0);
    assert!(line.contains("settle_operations_account"), "{line}");
    assert_eq!(
        scalar_i64(
            &db,
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'operations'
               AND indexname LIKE 'settle\\_%' AND indexname <> 'settle_operations_queue'"
        ),
        0,
        "the filter indexes are gone"
    );
    assert_eq!(
        scalar_i64(
            &db,
            "SELECT count(*) FROM pg_proc WHERE proname = 'settle_notify'"
        ),
        0
    );
    for (table, n) in [("operations", 1), ("events", 1), ("decisions", 1)] {
        assert_eq!(
            scalar_i64(&db, &format!("SELECT count(*) FROM {table}")),
            n,
            "{table}"
        );
    }
    assert_eq!(
        scalar_i64(&db, "SELECT version FROM settle_schema"),
        SCHEMA_VERSION
    );
    // The audit trail's own guards stay.
    let edit = connect(&db)
        .batch_execute("DELETE FROM decisions")
        .unwrap_err();
    assert!(
        edit.as_db_error()
            .is_some_and(|e| e.message().contains("append-only")),
        "{edit}"
    );
}

#[test]
fn an_index_a_failed_concurrent_build_left_invalid_is_built_again() {
    let Some(db) = fresh_database("invalid index") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let mut c = connect(&db);
    c.batch_execute(
        "DROP INDEX settle_decisions_op;
         INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
         VALUES (1, 'note', 'unknown', 'unknown', 'ana', now(), 0),
                (1, 'note', 'unknown', 'unknown', 'ana', now(), 0);",
    )
    .unwrap();
    // A unique build over two equal values fails, and leaves the index.
    assert!(
        c.batch_execute(
            "CREATE UNIQUE INDEX CONCURRENTLY settle_decisions_op ON decisions (op_id)"
        )
        .is_err()
    );
    let valid = "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                  WHERE c.relname = 'settle_decisions_op' AND i.indisvalid";
    assert_eq!(scalar_i64(&db, valid), 0);
    let (_, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(
        report
            .upgraded
            .as_deref()
            .is_some_and(|l| l.contains("repaired") && l.contains("settle_decisions_op")),
        "{report:?}"
    );
    assert_eq!(scalar_i64(&db, valid), 1);
}

#[test]
fn a_service_writing_through_an_adoption_waits_for_no_lock() {
    let Some(db) = fresh_database("adopt while writing") else {
        return;
    };
    let mut c = connect(&db);
    c.batch_execute(crate::store::postgres::schema::SERVICE_TABLES)
        .unwrap();
    c.batch_execute(
        "INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
         SELECT 'acct-' || (i % 700), 'charge', 'k-' || i, 'fp',
                CASE WHEN i % 50 = 0 THEN 'unknown' ELSE 'completed' END, 3, now(), now()
           FROM generate_series(1, 200000) AS i;
         INSERT INTO events (op_id, at, event) SELECT id, now(), 'done' FROM operations;",
    )
    .unwrap();
    let writer_db = db.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let service = std::thread::spawn(move || {
        let mut c = connect(&writer_db);
        c.batch_execute("SET lock_timeout = '5s'").unwrap();
        let mut longest = Duration::ZERO;
        let mut i = 0;
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            i += 1;
            let started = Instant::now();
            c.batch_execute(&format!(
                "BEGIN;
                 INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
                 VALUES ('svc', 'charge', 'w-{i}', 'fp', 'reserved', 3, now(), now());
                 INSERT INTO events (op_id, at, event) VALUES (currval('operations_id_seq'), now(), 'start');
                 UPDATE operations SET state = 'completed', version = version + 1
                  WHERE id = currval('operations_id_seq');
                 COMMIT;"
            ))
            .unwrap();
            longest = longest.max(started.elapsed());
            std::thread::sleep(Duration::from_millis(10));
        }
        (i, longest)
    });
    std::thread::sleep(Duration::from_millis(200));
    let (_, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(report.upgraded.is_some());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (writes, longest) = service.join().unwrap();
    assert!(writes > 0, "{writes}");
    // Generous for a shared test machine: a plain CREATE INDEX held the
    // writes for the whole build.
    assert!(longest < Duration::from_millis(1000), "{longest:?}");
}
