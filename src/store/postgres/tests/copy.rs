//! `settle copy` into and out of PostgreSQL beyond what every backend
//! shares: a new ledger's keys built after its rows end as the safe path
//! leaves them, a failure leaves the new ledger empty with every key, and a
//! service's own column types are read as tolerantly as the reads take
//! them.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::testing;
use crate::store::Ledger;
use crate::store::postgres::conn::Pg;
use crate::store::postgres::connect::Address;

/// A ledger made by `settle init`'s code in a fresh database; `created_here`
/// false makes a copy into it take the path for a ledger that was there.
fn pg_ledger(hint: &str, created_here: bool) -> Option<(PathBuf, Ledger)> {
    let address = testing::fresh_database(hint)?;
    let mut pg = Pg::create(&Address::parse(&address).unwrap()).unwrap();
    pg.created_here = created_here;
    Some((address, Ledger::from(pg)))
}

/// A SQLite ledger with `n` generated operations, each with two attempts
/// and three events, whose texts hold what COPY's formats reserve (tabs,
/// newlines, backslashes), text beyond ASCII and NULLs, plus the parity
/// fixture's decisions; long enough that every table crosses the copy's
/// buffer.
pub(crate) fn sqlite_source(dir: &Path, n: i64) -> PathBuf {
    let path = dir.join("source.db");
    let mut ledger = Ledger::create(&path).unwrap();
    let (ops, contracts) = crate::store::parity::fixture();
    ledger.import(&ops, &contracts).unwrap();
    for d in crate::store::parity::script() {
        let _ = ledger.record_decision(&d, crate::store::parity::now());
    }
    drop(ledger);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "WITH RECURSIVE g(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM g WHERE i < {})
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, params, state,
                 result_id, max_attempts, deadline_at, created_at, updated_at, version)
             SELECT i, 'acct-' || (i % 97), 'place_order', 'k-' || i, 'sha256:' || hex(i),
                 CASE WHEN i % 5 = 0 THEN NULL
                      ELSE '{{\"note\":\"tab\there\\\\ back\", \"é\":\"✓\"}}' || printf('%.300c', 'x') END,
                 CASE i % 3 WHEN 0 THEN 'unknown' WHEN 1 THEN 'completed' ELSE 'failed' END,
                 CASE WHEN i % 3 = 1 THEN 'res-' || i END, 3,
                 CASE WHEN i % 7 = 0 THEN '2026-12-01T00:00:00.123456Z' END,
                 '2026-10-01T00:00:00Z', '2026-10-01T00:01:00Z', i % 4
             FROM g;
             INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
             SELECT id, a, '2026-10-01T00:00:01Z', CASE WHEN a = 1 THEN '2026-10-01T00:00:31Z' END,
                 'timeout', 'read timeout' || char(10) || 'after 30s', NULL
             FROM operations, (SELECT 1 AS a UNION ALL SELECT 2) WHERE id >= 100;
             INSERT INTO events (op_id, attempt, at, event, detail)
             SELECT id, CASE WHEN e = 2 THEN 1 END, '2026-10-01T00:00:0' || e || 'Z', 'e' || e,
                 CASE WHEN e = 3 THEN '{{\"effect\":\"eff-' || id || '\"}}' END
             FROM operations, (SELECT 1 AS e UNION ALL SELECT 2 UNION ALL SELECT 3)
             WHERE id >= 100 ORDER BY id, e;",
            99 + n
        ))
        .unwrap();
    path
}

/// Every row of a SQLite ledger's tables, as text.
pub(crate) fn sqlite_rows(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut out = String::new();
    for table in crate::store::copy::TABLES.iter().map(|t| t.name) {
        let Ok(mut stmt) = conn.prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2")) else {
            continue;
        };
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap();
        for row in rows {
            out.push_str(&format!("{table}: {}\n", row.unwrap().join("|")));
        }
    }
    out
}

/// A PostgreSQL ledger's schema as the catalog holds it: every column with
/// its type, default and identity, every constraint, index and trigger
/// with its definition, and the schema version; and every row.
fn catalog_and_rows(address: &Path) -> (String, String) {
    let mut db = testing::connect(address);
    let lines = |db: &mut postgres::Client, sql: &str| -> String {
        db.query(sql, &[])
            .unwrap()
            .iter()
            .map(|r| format!("{}\n", r.get::<_, String>(0)))
            .collect()
    };
    let catalog = [
        "SELECT format('%s.%s %s %s %s %s', c.relname, a.attname,
             format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity,
             pg_get_expr(d.adbin, d.adrelid))
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
           AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1",
        "SELECT format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1",
        "SELECT format('%s %s', indexrelid::regclass, pg_get_indexdef(indexrelid))
         FROM pg_index WHERE indrelid::regclass::text NOT LIKE 'pg_%' ORDER BY 1",
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
        "SELECT 'schema ' || string_agg(version::text, ',') FROM settle_schema",
    ]
    .iter()
    .map(|sql| lines(&mut db, sql))
    .collect();
    let rows = [
        "operations",
        "attempts",
        "events",
        "decisions",
        "retry_requests",
        "op_types",
        "settle_probes",
        // When an operation joined the queue is the copy's own time.
        "(SELECT id FROM settle_queue)",
        "settle_event_ops",
    ]
    .iter()
    .map(|t| lines(&mut db, &format!("SELECT t::text FROM {t} t ORDER BY 1")))
    .collect();
    (catalog, rows)
}

/// The error a copy from `from` into `into` ends with.
fn refused(from: &Ledger, into: &mut Ledger) -> String {
    from.copy_into(into, &mut |_, _| {})
        .unwrap_err()
        .to_string()
}

/// Whether a copy's staging schema is in the database.
fn staging_left(address: &Path) -> bool {
    testing::connect(address)
        .query_one(
            "SELECT to_regnamespace($1::text) IS NOT NULL",
            &[&crate::store::postgres::copy::staged::STAGING],
        )
        .unwrap()
        .get(0)
}

/// The oid of a relation: a key built after the rows is newer than the
/// tables `settle init` made after it.
fn oid(address: &Path, relation: &str) -> u32 {
    testing::connect(address)
        .query_one("SELECT to_regclass($1)::oid", &[&relation])
        .unwrap()
        .get(0)
}

#[test]
fn a_new_ledger_gets_its_keys_after_the_rows_and_ends_as_the_safe_path_leaves_it() {
    let Some((fast, mut into_new)) = pg_ledger("copy new", true) else {
        return;
    };
    let (safe, mut into_existing) = pg_ledger("copy existing", false).unwrap();
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 4000);
    let (from, _) = Ledger::open(&source, crate::store::Access::ReadOnly).unwrap();
    let new = from.copy_into(&mut into_new, &mut |_, _| {}).unwrap();
    let existing = from.copy_into(&mut into_existing, &mut |_, _| {}).unwrap();
    assert_eq!(new, existing);
    assert_eq!(new.rows("operations"), 4007);
    assert_eq!(new.rows("events"), 12001);
    // The copy's own rows are recorded in settle's tables, with the marks
    // past them, so a read-only look reads those tables at once.
    for db in [&fast, &safe] {
        let row = testing::connect(db)
            .query_one(
                "SELECT op_mark = (SELECT max(id) FROM operations),
                        event_mark = (SELECT max(id) FROM events) AND event_map = event_mark,
                        (SELECT count(*) FROM settle_event_ops) = 12001,
                        (SELECT count(*) FROM settle_queue) > 0
                 FROM settle_queue_mark",
                &[],
            )
            .unwrap();
        let recorded: [bool; 4] = [row.get(0), row.get(1), row.get(2), row.get(3)];
        assert_eq!(recorded, [true; 4], "{}", db.display());
    }
    // The deferred path did defer: the keys were built after the tables
    // made after them; the safe path's were not.
    assert!(oid(&fast, "operations_pkey") > oid(&fast, "settle_schema"));
    assert!(oid(&safe, "operations_pkey") < oid(&safe, "settle_schema"));
    // So were those of what settle derives from the rows.
    assert!(oid(&fast, "settle_event_ops_pkey") > oid(&fast, "settle_schema"));
    assert!(oid(&fast, "settle_queue_pkey") > oid(&fast, "settle_schema"));
    // Staged elsewhere, the tables moved in and left nothing behind.
    assert!(!staging_left(&fast));
    let (catalog, rows) = catalog_and_rows(&fast);
    assert_eq!((catalog.clone(), rows), catalog_and_rows(&safe));
    assert!(
        catalog
            .contains("attempts attempts_op_id_fkey FOREIGN KEY (op_id) REFERENCES operations(id)")
    );
    assert!(catalog.contains("settle_event_ops_pkey"), "{catalog}");
    assert_eq!(
        into_new.verify_chain().unwrap(),
        from.verify_chain().unwrap()
    );

    // And back into SQLite: every row as it left.
    let back = dir.path().join("back.db");
    let (mut home, _) = Ledger::open_or_create(&back).unwrap();
    into_new.copy_into(&mut home, &mut |_, _| {}).unwrap();
    drop(home);
    assert_eq!(sqlite_rows(&back), sqlite_rows(&source));
}

#[test]
fn a_copy_that_fails_leaves_the_new_ledger_empty_with_every_key() {
    let Some((address, mut ledger)) = pg_ledger("copy fails", true) else {
        return;
    };
    let (pristine, _) = pg_ledger("copy pristine", true).unwrap();
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 50);
    // An attempt of an operation the source does not hold: a service's
    // SQLite need not check the reference; PostgreSQL does once the rows
    // are in.
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO attempts (op_id, attempt, started_at, outcome)
             VALUES (99999, 1, '2026-10-01T00:00:00Z', 'timeout')",
        )
        .unwrap();
    let (from, _) = Ledger::open(&source, crate::store::Access::ReadOnly).unwrap();
    let e = refused(&from, &mut ledger);
    assert!(
        e.contains("the source's rows break the ledger's rules"),
        "{e}"
    );
    assert!(e.contains("(op_id)=(99999)"), "{e}");
    assert!(e.contains("nothing was copied"), "{e}");
    assert_eq!(catalog_and_rows(&address), catalog_and_rows(&pristine));
    assert!(!staging_left(&address));

    // A time that is not one stops the copy mid-table, by row and column.
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch(
            "DELETE FROM attempts WHERE op_id = 99999;
             UPDATE events SET at = 'soon' WHERE id = (SELECT max(id) FROM events);",
        )
        .unwrap();
    let e = refused(&from, &mut ledger);
    assert!(
        e.contains("events row 151: at: soon is not what the column holds"),
        "{e}"
    );
    assert_eq!(catalog_and_rows(&address), catalog_and_rows(&pristine));

    // Mended, the same ledger takes the copy.
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch("UPDATE events SET at = '2026-10-02T00:00:00Z' WHERE at = 'soon'")
        .unwrap();
    let copied = from.copy_into(&mut ledger, &mut |_, _| {}).unwrap();
    assert_eq!(copied.rows("operations"), 57);
}

#[test]
fn a_services_own_types_copy_out_and_into_a_new_ledger() {
    let Some(service) = testing::fresh_database("copy service types") else {
        return;
    };
    // A service's own choices: `integer` ids, `timestamptz` with a fraction
    // beside a time kept as text, `jsonb` params and `json` detail.
    testing::connect(&service)
        .batch_execute(
            "CREATE TABLE operations (id integer PRIMARY KEY, account text NOT NULL,
                op_type text NOT NULL, idem_key text NOT NULL, fingerprint text NOT NULL,
                params jsonb, state text NOT NULL, result_id text, max_attempts smallint NOT NULL,
                deadline_at timestamptz, lease_expires_at text, key_expires_at timestamp,
                created_at timestamptz NOT NULL, updated_at text NOT NULL, version integer NOT NULL);
             CREATE TABLE attempts (op_id integer NOT NULL REFERENCES operations(id),
                attempt integer NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz,
                outcome text NOT NULL, error text, response json, PRIMARY KEY (op_id, attempt));
             CREATE TABLE events (id integer PRIMARY KEY, op_id integer NOT NULL,
                attempt integer, at timestamptz NOT NULL, event text NOT NULL, detail json);
             INSERT INTO operations VALUES
                (1, 'acct', 'place_order', 'k-1', 'sha256:1', '{\"amount\": 5, \"ref\": \"k-1\"}',
                 'unknown', NULL, 3, '2026-12-01 00:00:00.25+00', '2026-11-30 10:00:00',
                 '2026-11-30 12:00:00', '2026-11-30 10:00:00+00', '2026-11-30T10:00:05Z', 2),
                (2, 'acct', 'place_order', 'k-2', 'sha256:2', NULL, 'completed', 'r-2', 3,
                 NULL, NULL, NULL, '2026-11-30 11:00:00+00', '2026-11-30T11:00:00Z', 1);
             INSERT INTO attempts VALUES
                (1, 1, '2026-11-30 10:00:01+00', NULL, 'timeout', 'read timeout', '{\"a\":1}');
             INSERT INTO events VALUES (7, 1, 1, '2026-11-30 10:00:01.5+00', 'started',
                '{\"line\": \"a\\tb\"}');",
        )
        .unwrap();
    let dir = TempDir::new().unwrap();
    let (from, _) = Ledger::open(&service, crate::store::Access::ReadOnly).unwrap();
    let out = dir.path().join("out.db");
    let (mut lite, _) = Ledger::open_or_create(&out).unwrap();
    let report = from.copy_into(&mut lite, &mut |_, _| {}).unwrap();
    assert_eq!(
        (
            report.rows("operations"),
            report.rows("attempts"),
            report.rows("events")
        ),
        (2, 1, 1)
    );
    drop(lite);
    let rows = sqlite_rows(&out);
    for kept in [
        "Integer(1)|Text(\"acct\")|Text(\"place_order\")|Text(\"k-1\")|Text(\"sha256:1\")|\
         Text(\"{\\\"ref\\\": \\\"k-1\\\", \\\"amount\\\": 5}\")|Text(\"unknown\")|Null|Integer(3)|\
         Text(\"2026-12-01T00:00:00.250Z\")|Text(\"2026-11-30 10:00:00\")|\
         Text(\"2026-11-30T12:00:00Z\")|Text(\"2026-11-30T10:00:00Z\")|\
         Text(\"2026-11-30T10:00:05Z\")|Integer(2)",
        "attempts: Integer(1)|Integer(1)|Text(\"2026-11-30T10:00:01Z\")|Null|Text(\"timeout\")|\
         Text(\"read timeout\")|Text(\"{\\\"a\\\":1}\")",
        "events: Integer(7)|Integer(1)|Integer(1)|Text(\"2026-11-30T10:00:01.500Z\")|\
         Text(\"started\")|Text(\"{\\\"line\\\": \\\"a\\\\tb\\\"}\")",
    ] {
        assert!(rows.contains(kept), "{kept}\nnot in\n{rows}");
    }

    // Straight into a new PostgreSQL ledger of settle's own types.
    let Some((address, mut into)) = pg_ledger("copy service types into", true) else {
        return;
    };
    from.copy_into(&mut into, &mut |_, _| {}).unwrap();
    let at: String = testing::connect(&address)
        .query_one(
            "SELECT to_char(deadline_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || ' ' ||
                    to_char(lease_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
             FROM operations WHERE id = 1",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(at, "2026-12-01 00:00:00.250 2026-11-30 10:00:00");
}

#[test]
fn a_destination_that_refuses_a_row_stops_the_read_of_a_long_table() {
    let Some(service) = testing::fresh_database("copy stops reading") else {
        return;
    };
    // More rows than the reader may hold ahead of the writer, the first
    // of them refused by a destination of settle's own types.
    testing::connect(&service)
        .batch_execute(&format!(
            "{}
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
             VALUES (1, 'acct', 'pay', 'k-1', 'fp', 'unknown', 3, now(), now());
             ALTER TABLE events ALTER COLUMN at TYPE text;
             INSERT INTO events (op_id, at, event)
             SELECT 1, CASE WHEN g = 1 THEN 'soon' ELSE '2026-10-01T00:00:00Z' END, 'e'
             FROM generate_series(1, 20000) AS g;",
            crate::store::postgres::schema::SERVICE_TABLES
        ))
        .unwrap();
    let (from, _) = Ledger::open(&service, crate::store::Access::ReadOnly).unwrap();
    let (_, mut into) = pg_ledger("copy stops reading into", true).unwrap();
    let e = refused(&from, &mut into);
    assert!(
        e.contains("events row 1: at: soon is not what the column holds"),
        "{e}"
    );
    // The source's connection is whole: it reads on.
    let dir = TempDir::new().unwrap();
    let (mut lite, _) = Ledger::open_or_create(&dir.path().join("out.db")).unwrap();
    let copied = from.copy_into(&mut lite, &mut |_, _| {}).unwrap();
    assert_eq!(copied.rows("events"), 20000);
}

#[test]
fn a_copy_drops_what_a_stopped_copy_left_staged_and_never_a_schema_not_its_own() {
    let Some((address, mut ledger)) = pg_ledger("copy leftover", true) else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 20);
    let (from, _) = Ledger::open(&source, crate::store::Access::ReadOnly).unwrap();
    let staging = crate::store::postgres::copy::staged::STAGING;
    let mut db = testing::connect(&address);
    // Someone's own schema of that name is refused and kept.
    db.batch_execute(&format!(
        "CREATE SCHEMA {staging}; CREATE TABLE {staging}.mine (x int); \
         INSERT INTO {staging}.mine VALUES (1)"
    ))
    .unwrap();
    let e = refused(&from, &mut ledger);
    assert!(e.contains("that settle did not make"), "{e}");
    let kept: i64 = db
        .query_one(&format!("SELECT count(*) FROM {staging}.mine"), &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 1);

    // What a copy whose process died left carries settle's comment, and
    // goes before the next copy stages its own.
    db.batch_execute(&format!(
        "COMMENT ON SCHEMA {staging} IS '{}'",
        crate::store::postgres::copy::staged::MARKER
    ))
    .unwrap();
    let copied = from.copy_into(&mut ledger, &mut |_, _| {}).unwrap();
    assert_eq!(copied.rows("operations"), 27);
    assert!(!staging_left(&address));
    let ops: i64 = db
        .query_one("SELECT count(*) FROM operations", &[])
        .unwrap()
        .get(0);
    assert_eq!(ops, 27);
}

#[test]
fn a_row_the_server_refuses_mid_table_stops_a_staged_copy_with_the_servers_word() {
    let Some((address, mut ledger)) = pg_ledger("copy server refuses", true) else {
        return;
    };
    let (pristine, _) = pg_ledger("copy server refuses pristine", true).unwrap();
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 4000);
    // SQLite keeps a NUL inside text; PostgreSQL's text cannot hold one,
    // and only the server finds it, in the session writing the events,
    // while the copy streams on.
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch("UPDATE events SET detail = 'a' || char(0) || 'b' WHERE id = 5000")
        .unwrap();
    let (from, _) = Ledger::open(&source, crate::store::Access::ReadOnly).unwrap();
    let e = refused(&from, &mut ledger);
    assert!(e.contains("writing events"), "{e}");
    assert!(e.contains("0x00"), "{e}");
    assert!(!e.contains("stopped"), "{e}");
    assert_eq!(catalog_and_rows(&address), catalog_and_rows(&pristine));
    assert!(!staging_left(&address));
}

#[test]
fn a_role_that_may_not_make_a_schema_copies_into_a_new_ledger_in_one_transaction() {
    let Some(admin_address) = testing::fresh_database("copy no schema") else {
        return;
    };
    // A role that may make tables in the ledger's schema, and no schema in
    // the database: it cannot stage, and copies as one transaction does.
    let role = "settle_copy_tables_only";
    let mut admin = testing::connect(&admin_address);
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
             GRANT CREATE, USAGE ON SCHEMA public TO {role};"
        ))
        .unwrap();
    let spec = admin_address
        .to_string_lossy()
        .replace("user=postgres", &format!("user={role}"));
    let address = PathBuf::from(spec);
    let pg = Pg::create(&Address::parse(&address).unwrap()).unwrap();
    let mut ledger = Ledger::from(pg);
    let dir = TempDir::new().unwrap();
    let source = sqlite_source(dir.path(), 300);
    let (from, _) = Ledger::open(&source, crate::store::Access::ReadOnly).unwrap();
    let may: bool = testing::connect(&address)
        .query_one(
            "SELECT has_database_privilege(current_database(), 'CREATE')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!may);
    let copied = from.copy_into(&mut ledger, &mut |_, _| {}).unwrap();
    assert_eq!(copied.rows("operations"), 307);
    assert!(!staging_left(&address));
    // It ends as a staged copy does.
    let (staged_address, mut staged) = pg_ledger("copy no schema staged", true).unwrap();
    assert_eq!(from.copy_into(&mut staged, &mut |_, _| {}).unwrap(), copied);
    assert_eq!(
        catalog_and_rows(&address),
        catalog_and_rows(&staged_address)
    );
    // Every key came back after the rows.
    assert!(oid(&address, "operations_pkey") > oid(&address, "settle_schema"));
    assert!(oid(&address, "settle_event_ops_pkey") > oid(&address, "settle_schema"));
    assert_eq!(ledger.verify_chain().unwrap(), from.verify_chain().unwrap());
}
