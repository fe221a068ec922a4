//! Tests of the PostgreSQL backend against a throwaway cluster
//! ([`super::testing`]): each test gets a database of its own and skips
//! loudly when the machine has no PostgreSQL server.

use super::testing::{connect, fresh_database};

impl crate::store::postgres::Pg {
    /// Connects to `address` without checking or adopting its schema: for
    /// tests that build the tables as a service would. Here rather than in
    /// `testing.rs`, which integration tests include and which therefore
    /// cannot name the crate's types.
    pub(crate) fn connect_for_test(
        address: &std::path::Path,
        read_only: bool,
    ) -> crate::store::postgres::Pg {
        let address = crate::store::postgres::Address::parse(address).expect("a test address");
        let mut pg =
            crate::store::postgres::Pg::connect(&address, read_only, crate::store::BUSY_TIMEOUT)
                .expect("connecting to the test database");
        pg.queue = pg
            .client
            .get_mut()
            .query_one("SELECT to_regclass('settle_queue_mark') IS NOT NULL", &[])
            .expect("looking for the queue's table")
            .get(0);
        // Events by `op_id` where settle's table is not whole: the tables
        // are small, a scan finds them.
        let whole: bool = pg
            .client
            .get_mut()
            .query_one(
                "SELECT to_regclass('settle_event_ops') IS NOT NULL
                    AND to_regclass('settle_queue_mark') IS NOT NULL",
                &[],
            )
            .expect("looking for the events' table")
            .get(0);
        if !whole {
            pg.events = crate::store::postgres::schema::Events::Index;
        }
        pg
    }
}

#[test]
fn the_harness_hands_each_test_its_own_empty_database_on_a_socket_only_server() {
    let Some(a) = fresh_database("harness a") else {
        return;
    };
    let b = fresh_database("harness b").unwrap();
    assert_ne!(a, b);
    let mut ca = connect(&a);
    ca.batch_execute("CREATE TABLE only_in_a (x int)").unwrap();
    let n: i64 = connect(&b)
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_in_a'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "a database handed out must be empty");
    // No TCP: the server listens only on the socket in the temp dir.
    let listen: String = ca.query_one("SHOW listen_addresses", &[]).unwrap().get(0);
    assert_eq!(listen, "");
}

use std::path::Path;
use std::time::{Duration, Instant};

use crate::store::postgres::schema::{SCHEMA_VERSION, SERVICE_TABLES};
use crate::store::{Access, Ledger};

/// A database holding a service's tables and two operations, written with
/// plain SQL as a service writes them; settle has never seen it.
fn service_database(hint: &str) -> Option<std::path::PathBuf> {
    let db = fresh_database(hint)?;
    let mut c = connect(&db);
    c.batch_execute(SERVICE_TABLES).unwrap();
    c.batch_execute(
        "INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
         VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, now(), now()),
                ('acme', 'charge', 'k-2', 'fp', 'completed', 3, now(), now());
         INSERT INTO events (op_id, at, event, detail) VALUES (1, now(), 'timeout', 'upstream 504');",
    )
    .unwrap();
    Some(db)
}

fn scalar_i64(db: &Path, sql: &str) -> i64 {
    connect(db).query_one(sql, &[]).unwrap().get(0)
}

fn settle_objects(db: &Path) -> i64 {
    scalar_i64(
        db,
        // The primary keys of settle's tables are the tables', not ones settle adds.
        "SELECT (SELECT count(*) FROM pg_indexes
                  WHERE indexname LIKE 'settle\\_%'
                    AND indexname NOT IN ('settle_probes_pkey', 'settle_queue_pkey',
                                          'settle_event_ops_pkey'))
              + (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'settle\\_%')",
    )
}

/// Waits (bounded) until `f` holds; the notices travel between processes.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn init_creates_a_ledger_that_opens_without_adopting_and_refuses_a_second_init() {
    let Some(db) = fresh_database("init") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    assert_eq!(
        scalar_i64(&db, "SELECT version FROM settle_schema"),
        SCHEMA_VERSION
    );
    let (ledger, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert_eq!(report, crate::store::OpenReport::default());
    assert!(!ledger.is_read_only());
    let again = Ledger::create(&db).unwrap_err().to_string();
    assert!(
        again.contains("already holds a ledger (table `operations` exists)"),
        "{again}"
    );
}

#[test]
fn a_newer_schema_is_refused_in_the_same_words_as_sqlite() {
    let Some(db) = fresh_database("newer") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    connect(&db)
        .batch_execute("UPDATE settle_schema SET version = version + 1")
        .unwrap();
    for access in [Access::ReadOnly, Access::ReadWrite] {
        let e = Ledger::open(&db, access).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "schema version {} is newer than this settle knows ({SCHEMA_VERSION})",
                SCHEMA_VERSION + 1
            )) && e.contains("use a newer settle; this one will not read or write it"),
            "{e}"
        );
    }
}

#[test]
fn a_read_only_open_never_adopts_and_its_session_cannot_write() {
    let Some(db) = service_database("read only") else {
        return;
    };
    let (pg, report) = open_pg(&db, Access::ReadOnly);
    assert_eq!(
        report.not_adopted.as_deref(),
        Some(
            "schema 0 is older than 4; shown read-only without adopting it (adopting adds \
             table decisions, table retry_requests, table op_types, settle's indexes (built \
             without blocking writes), the table that shows each operation's last event; \
             no trigger on the service's tables)"
        )
    );
    assert_eq!(report.upgraded, None);
    assert_eq!(settle_objects(&db), 0);
    assert_eq!(
        scalar_i64(
            &db,
            "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('decisions', 'settle_schema')"
        ),
        0
    );
    assert!(!pg.tables.console);
    let write = pg
        .client
        .borrow_mut()
        .batch_execute("CREATE TABLE decisions (id bigint)")
        .unwrap_err();
    let why = write.as_db_error().unwrap().message();
    assert!(why.contains("read-only transaction"), "{why}");
}

#[test]
fn a_writable_open_adopts_a_service_database_once_without_touching_its_rows() {
    let Some(db) = service_database("adopt") else {
        return;
    };
    let rows_before = scalar_i64(&db, "SELECT count(*) FROM operations");
    let (_ledger, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let line = report.upgraded.unwrap();
    assert!(
        line.starts_with("settle: adopted postgres@")
            && line.contains("(schema 0 -> 4): added table decisions, table retry_requests, table op_types, indexes, append-only triggers on settle's own tables; no service rows changed"),
        "{line}"
    );
    assert!(!line.contains("password"));
    assert_eq!(
        scalar_i64(&db, "SELECT count(*) FROM operations"),
        rows_before
    );
    assert_eq!(
        scalar_i64(&db, "SELECT version FROM settle_schema"),
        SCHEMA_VERSION
    );
    // The queue in settle's own table, not in an index on `operations`:
    // the unknown operation, not the completed one.
    assert_eq!(
        scalar_i64(&db, "SELECT count(*) FROM settle_queue WHERE id = 1"),
        1
    );
    assert_eq!(scalar_i64(&db, "SELECT count(*) FROM settle_queue"), 1);
    assert_eq!(
        settle_objects(&db),
        crate::store::postgres::schema::objects::names().len() as i64
    );
    assert_eq!(
        scalar_i64(
            &db,
            "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal
              AND tgrelid IN ('operations'::regclass, 'attempts'::regclass, 'events'::regclass)"
        ),
        0,
        "a service's write runs nothing of settle's"
    );
    let (_, second) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert_eq!(second.upgraded, None, "adopted twice");
}

#[test]
fn two_processes_adopting_at_once_adopt_once() {
    let Some(db) = service_database("adopt race") else {
        return;
    };
    let openers: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || Ledger::open(&db, Access::ReadWrite).map(|(_, r)| r))
        })
        .collect();
    let reports: Vec<_> = openers
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    assert_eq!(
        reports.iter().filter(|r| r.upgraded.is_some()).count(),
        1,
        "{reports:?}"
    );
}

#[test]
fn a_dropped_trigger_is_put_back_and_named_on_the_next_writable_open() {
    let Some(db) = fresh_database("repair") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    connect(&db)
        .batch_execute("DROP TRIGGER settle_decisions_no_update ON decisions")
        .unwrap();
    let (_, ro) = Ledger::open(&db, Access::ReadOnly).unwrap();
    assert!(ro.not_adopted.is_some());
    let (_, rw) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let line = rw.upgraded.unwrap();
    assert!(
        line.contains("repaired") && line.contains("the missing settle_decisions_no_update"),
        "{line}"
    );
}

/// The refusal a plain SQL edit of the audit trail gets, on each backend.
fn refusals(edits: &[&str], pg: &mut ::postgres::Client, lite: &rusqlite::Connection) {
    for edit in edits {
        let on_pg = match pg.batch_execute(edit) {
            Ok(()) => panic!("PostgreSQL allowed {edit}"),
            Err(e) => e.as_db_error().unwrap().message().to_string(),
        };
        let on_sqlite = lite.execute_batch(edit).unwrap_err().to_string();
        assert_eq!(on_pg, on_sqlite, "{edit}");
    }
}

#[test]
fn the_audit_trail_refuses_edits_and_deletes_with_sqlites_words() {
    let Some(db) = fresh_database("append only") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let lite_path = dir.path().join("ledger.db");
    drop(Ledger::create(&lite_path).unwrap());
    let lite = rusqlite::Connection::open(&lite_path).unwrap();
    let mut pg = connect(&db);
    let rows = [
        "INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version) \
         VALUES (1, 'applied', 'unknown', 'completed', 'ana', '2026-11-30T12:00:00Z', 0)",
        "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by, status, decision_id) \
         VALUES (1, 'k', '2026-11-30T12:00:00Z', 'ana', 'queued', 1)",
    ];
    for row in rows {
        pg.batch_execute(row).unwrap();
        lite.execute_batch(row).unwrap();
    }
    refusals(
        &[
            "UPDATE decisions SET note = 'edited'",
            "DELETE FROM decisions",
            "DELETE FROM retry_requests",
            "UPDATE retry_requests SET requested_by = 'mallory'",
        ],
        &mut pg,
        &lite,
    );
    // Forward is allowed, backward refused.
    pg.batch_execute("UPDATE retry_requests SET status = 'claimed'")
        .unwrap();
    lite.execute_batch("UPDATE retry_requests SET status = 'claimed'")
        .unwrap();
    refusals(
        &["UPDATE retry_requests SET status = 'queued'"],
        &mut pg,
        &lite,
    );
    let truncate = pg.batch_execute("TRUNCATE decisions").unwrap_err();
    assert_eq!(
        truncate.as_db_error().unwrap().message(),
        "decisions are append-only: nothing is ever deleted from the audit trail"
    );
    assert_eq!(scalar_i64(&db, "SELECT count(*) FROM decisions"), 1);
}

#[test]
fn a_watching_ledger_sees_another_writers_commit() {
    let Some(db) = fresh_database("watch") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let (watching, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    // Other tests write to the same server, which moves its WAL too: only
    // a change is asserted, not its absence.
    eventually("the watcher's first answer", || {
        watching.data_version().unwrap() > 0
    });
    let before = watching.data_version().unwrap();
    connect(&db)
        .batch_execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
             VALUES ('acme', 'charge', 'k-9', 'fp', 'unknown', 3, now(), now())",
        )
        .unwrap();
    eventually("the insert is heard", || {
        watching.data_version().unwrap() != before
    });
}

#[test]
fn a_lost_connection_is_not_live_until_it_reconnects_and_the_screen_is_reread() {
    use crate::app::Msg;
    use crate::console::watch::Watch;
    let Some(db) = fresh_database("reconnect") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let (watching, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    let mut watch = Watch::new(watching, None, Instant::now());
    // The watcher's first answer, and other tests' commits on the same
    // server, are changes; nothing else is said.
    let first = watch.poll(Instant::now());
    assert!(first.iter().all(|m| *m == Msg::LedgerChanged), "{first:?}");
    assert_eq!(watch.file_problem(), None, "a server's ledger has no file");
    // The server ends every other session, as a restart or failover would,
    // and takes no new one for a while.
    let words = db.to_str().unwrap();
    let name = words.rsplit("dbname=").next().unwrap().to_string();
    let mut admin = connect(Path::new(
        &words.replace(&format!("dbname={name}"), "dbname=postgres"),
    ));
    let allow = |on: bool| format!("ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS {on}");
    admin.batch_execute(&allow(false)).unwrap();
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
            &[&name],
        )
        .unwrap();
    let mut said = Vec::new();
    // Other tests' commits on the same server are changes too.
    let mut listen = |said: &mut Vec<Msg>| {
        said.extend(
            watch
                .poll(Instant::now())
                .into_iter()
                .filter(|m| *m != Msg::LedgerChanged),
        );
    };
    eventually("the loss is said", || {
        listen(&mut said);
        !said.is_empty()
    });
    admin.batch_execute(&allow(true)).unwrap();
    eventually("the reconnection is said", || {
        listen(&mut said);
        said.contains(&Msg::LiveRestored)
    });
    assert!(matches!(said[0], Msg::LiveLost(_)), "{said:?}");
    assert_eq!(
        said.iter()
            .filter(|m| matches!(m, Msg::LiveLost(_)))
            .count(),
        1,
        "said once: {said:?}"
    );
    // Live again: a change after the reconnection is heard.
    connect(&db)
        .batch_execute("INSERT INTO events (op_id, at, event) VALUES (1, now(), 'late')")
        .unwrap();
    eventually("a change after the reconnection is heard", || {
        watch.poll(Instant::now()).contains(&Msg::LedgerChanged)
    });
}

/// The role SQL docs/ledger-v1.md gives, run as written.
pub(crate) fn documented_role_sql() -> String {
    let doc = include_str!("../../../../docs/ledger-v1.md");
    let (_, after) = doc
        .split_once("<!-- service-role-sql: the tests run this block -->\n```sql\n")
        .unwrap();
    after.split_once("```").unwrap().0.to_string()
}

#[test]
fn the_documented_service_role_writes_operations_but_never_decisions() {
    let Some(db) = fresh_database("roles") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let mut owner = connect(&db);
    owner.batch_execute(&documented_role_sql()).unwrap();
    let denied = |c: &mut ::postgres::Client, sql: &str| {
        let e = c.batch_execute(sql).unwrap_err();
        assert_eq!(
            e.code(),
            Some(&::postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {e:?}"
        );
    };
    let mut service = connect(&db);
    service.batch_execute("SET ROLE payments_service").unwrap();
    service
        .batch_execute(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
             VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, now(), now());
             INSERT INTO events (op_id, at, event) VALUES (1, now(), 'timeout');
             SELECT count(*) FROM decisions;",
        )
        .unwrap();
    let decision = "INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
                    VALUES (1, 'applied', 'unknown', 'completed', 'svc', now(), 0)";
    denied(&mut service, decision);
    let mut console = connect(&db);
    console.batch_execute("SET ROLE settle_console").unwrap();
    console
        .batch_execute(&format!(
            "{decision};
             UPDATE operations SET state = 'completed', version = version + 1 WHERE id = 1;
             INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by, status, decision_id)
             VALUES (1, 'k-1', now(), 'ana', 'queued', 1);"
        ))
        .unwrap();
    denied(&mut console, "DELETE FROM events");
    denied(&mut service, "UPDATE decisions SET note = 'x'");
    service
        .batch_execute("UPDATE retry_requests SET status = 'claimed'")
        .unwrap();
}

#[test]
fn a_read_on_a_connection_the_server_closed_runs_again_on_a_new_one() {
    let Some(db) = fresh_database("read reconnect") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let (pg, _) = open_pg(&db, Access::ReadOnly);
    let pid = |pg: &crate::store::postgres::Pg| {
        pg.read_reconnecting("asking its pid", |c| {
            c.query_one("SELECT pg_backend_pid()", &[])
                .map(|r| r.get::<_, i32>(0))
        })
        .unwrap()
    };
    let before = pid(&pg);
    scalar_i64(
        &db,
        &format!("SELECT count(pg_terminate_backend({before}))"),
    );
    let after = pid(&pg);
    assert_ne!(before, after, "the read ran on a new connection");
    // The new connection is set up as the first: still read-only.
    let write = pg
        .read_reconnecting("writing", |c| c.batch_execute("CREATE TABLE x (y int)"))
        .unwrap_err()
        .to_string();
    assert!(write.contains("read-only transaction"), "{write}");
}

#[test]
fn an_unadopted_ledger_is_live_and_its_service_tables_carry_nothing_of_settle() {
    let Some(db) = service_database("unadopted live") else {
        return;
    };
    let (watching, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    eventually("the watcher's first answer", || {
        watching.data_version().unwrap() > 0
    });
    let before = watching.data_version().unwrap();
    connect(&db)
        .batch_execute("UPDATE operations SET state = 'completed' WHERE id = 1")
        .unwrap();
    eventually("the service's update is seen", || {
        watching.data_version().unwrap() != before
    });
    assert_eq!(settle_objects(&db), 0, "a look adds nothing");
}

#[test]
fn every_read_comes_back_after_the_server_closed_the_connection() {
    let Some(db) = fresh_database("reads reconnect") else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let (ledger, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    let now = chrono::Utc::now();
    let query = crate::query::Query::default();
    assert!(
        ledger
            .page(&query, crate::store::Seek::First, 10, now)
            .is_ok()
    );
    scalar_i64(
        &db,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE application_name = 'settle' AND datname = current_database()",
    );
    // The first read may meet the closed socket; from then on every read
    // runs on a new connection instead of failing for ever.
    eventually("a page read again", || {
        ledger
            .page(&query, crate::store::Seek::First, 10, now)
            .is_ok()
    });
    assert!(ledger.count(&query, now).is_ok());
    assert!(ledger.state_counts(now).is_ok());
    assert!(ledger.audit_page(crate::store::Seek::First, 10).is_ok());
}

/// The PostgreSQL backend itself opened at `db`, as a ledger's open does,
/// for a test that looks inside it.
fn open_pg(
    db: &std::path::Path,
    access: Access,
) -> (crate::store::postgres::Pg, crate::store::OpenReport) {
    let address = crate::store::postgres::Address::parse(db).unwrap();
    crate::store::postgres::Pg::open_waiting(
        &address,
        access,
        crate::store::BUSY_TIMEOUT,
        &mut |_| {},
    )
    .unwrap()
}
