//! One set of read cases run against both backends: the same small ledger
//! written with the same plain SQL into a SQLite file and a PostgreSQL
//! database, then every read compared value for value — pages walked three
//! rows at a time in every sort order and both directions, streams, counts,
//! clusters, details and the audit trail. The console and the CLI must not
//! notice which database they talk to. (The cases that write, and run on
//! every registered backend, are in [`crate::store::parity`]; these read a
//! ledger whose PostgreSQL columns follow a locale's collation, which only
//! that backend has.)

use crate::store::backend::{History as _, Reads as _};
use chrono::{DateTime, TimeZone, Utc};
use tempfile::TempDir;

use super::testing::fresh_database;
use crate::domain::{DecisionId, OperationId, OperationRow, Seek, Sort, SortColumn, SortKey};
use crate::query::Query;
use crate::store::Access;
use crate::store::backend::Session as _;
use crate::store::postgres::conn::Pg;
use crate::store::postgres::schema::{CONSOLE_TABLES, SERVICE_TABLES};
use crate::store::sqlite::Sqlite;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

/// The ledger, as a service and the console would have written it. Valid
/// in both dialects: times in the ledger's own form, booleans as `true`.
/// Accounts differ in case, accents and LIKE metacharacters, so an order or
/// a match that follows the database's locale instead of bytes shows.
const LEDGER: &str = r#"
INSERT INTO operations (id, account, op_type, idem_key, fingerprint, params, state, result_id,
    max_attempts, deadline_at, lease_expires_at, key_expires_at, created_at, updated_at, version)
VALUES
 (1, 'acme', 'charge', 'k-1', 'fp1', '{"amount": 5}', 'unknown', NULL, 3, '2026-06-02T00:00:00Z',
    NULL, NULL, '2026-01-01T00:00:00Z', '2026-05-01T00:00:00Z', 2),
 (2, 'Acme', 'charge', 'k-2', 'fp2', NULL, 'completed', 'r-2', 3, NULL, NULL, NULL,
    '2026-01-02T00:00:00Z', '2026-06-01T11:59:00Z', 1),
 (3, 'ähm', 'refund', 'k-3', 'fp3', NULL, 'exhausted', NULL, 2, NULL, NULL, NULL,
    '2026-01-01T00:00:00Z', '2026-03-01T00:00:00Z', 4),
 (4, 'b_x%', 'refund', 'k-10', 'fp4', NULL, 'reserved', NULL, 3, NULL,
    '2026-06-01T11:00:00Z', NULL, '2026-01-03T00:00:00Z', '2026-06-01T10:00:00Z', 1),
 (5, 'bax', 'charge', 'K-11', 'fp5', NULL, 'reserved', NULL, 3, NULL,
    '2026-06-01T13:00:00Z', NULL, '2026-01-03T00:00:00Z', '2026-06-01T10:00:00Z', 1),
 (6, 'zeta', 'charge', 'k-12', 'fp6', NULL, 'reserved', NULL, 3, NULL, NULL, NULL,
    '2026-01-04T00:00:00Z', '2026-06-01T10:00:00Z', 1),
 (7, 'Zeta', 'notify', 'a/b/c', 'fp7', NULL, 'conflict', 'r-7', 3, NULL, NULL,
    '2026-07-01T00:00:00Z', '2026-01-05T00:00:00Z', '2026-05-20T00:00:00Z', 3),
 (8, 'acme', 'notify', 'k-8', 'fp8', NULL, 'not_applied', NULL, 3, NULL, NULL, NULL,
    '2026-01-05T00:00:00Z', '2026-05-31T00:00:00Z', 2),
 (9, 'acme', 'charge', 'k-9', 'fp9', NULL, 'retry_pending', NULL, 3, NULL, NULL, NULL,
    '2026-01-06T00:00:00Z', '2026-06-01T11:00:00Z', 5),
 (10, 'acme-eu', 'charge', 'k-100', 'fp10', NULL, 'weird_word', NULL, 3, NULL, NULL, NULL,
    '2026-01-06T00:00:00Z', '2026-04-01T00:00:00Z', 1),
 (11, 'acme-eu', 'Charge', 'k-101', 'fp11', NULL, 'unknown', NULL, 3, NULL, NULL, NULL,
    '2026-01-07T00:00:00Z', '2026-05-31T12:00:00Z', 1),
 (12, 'acme', 'charge', 'k-102', 'fp12', NULL, 'unknown', NULL, 3, NULL, NULL, NULL,
    '2026-01-07T00:00:00Z', '2026-01-07T00:00:00Z', 1),
 (13, 'émile', 'charge', 'k-103', 'fp13', NULL, 'exhausted', NULL, 1, NULL, NULL, NULL,
    '2026-01-08T00:00:00Z', '2026-02-01T00:00:00Z', 1);
INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response) VALUES
 (1, 1, '2026-01-01T00:00:01Z', '2026-01-01T00:00:31Z', 'timeout', 'Timeout after 30s', NULL),
 (1, 2, '2026-01-01T00:01:00Z', NULL, 'in_flight', NULL, NULL),
 (2, 1, '2026-01-02T00:00:01Z', '2026-01-02T00:00:02Z', 'success', NULL, '{"ok":true}'),
 (3, 1, '2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z', 'error', 'connection reset', NULL),
 (3, 2, '2026-01-01T00:01:01Z', '2026-01-01T00:01:02Z', 'error', 'connection RESET', NULL),
 (7, 1, '2026-01-05T00:00:01Z', '2026-01-05T00:00:02Z', 'conflict', 'fingerprint 100%_off', NULL),
 (11, 1, '2026-01-07T00:00:01Z', '2026-01-07T00:00:31Z', 'timeout', 'Timeout after 30s', NULL),
 (11, 2, '2026-01-07T00:01:01Z', '2026-01-07T00:01:31Z', 'timeout', 'timeout after 30s', NULL),
 (11, 3, '2026-01-07T00:02:01Z', '2026-01-07T00:02:31Z', 'strange', 'Über-Fehler', NULL),
 (13, 1, '2026-01-08T00:00:01Z', '2026-01-08T00:00:31Z', 'timeout', 'connection reset', NULL);
INSERT INTO events (id, op_id, attempt, at, event, detail) VALUES
 (1, 1, 1, '2026-01-01T00:00:01Z', 'sent', NULL),
 (2, 1, 1, '2026-01-01T00:00:31Z', 'timeout', NULL),
 (3, 2, 1, '2026-01-02T00:00:02Z', 'committed', '{"effect_id": "e-2"}'),
 (4, 3, NULL, '2026-01-01T00:02:00Z', 'gave_up', 'two errors'),
 (5, 7, 1, '2026-01-05T00:00:02Z', 'Conflict', NULL),
 (6, 11, 3, '2026-01-07T00:02:31Z', 'sent', NULL),
 (7, 9, NULL, '2026-06-01T11:00:00Z', 'retry_requested', NULL),
 (8, 1, 2, '2026-01-01T00:01:00Z', 'sent', NULL);
INSERT INTO op_types (op_type, idempotent, key_retention_s, description) VALUES
 ('charge', true, 86400, 'Charges a card'),
 ('notify', false, NULL, NULL);
INSERT INTO decisions (id, op_id, decision, from_state, to_state, result_id, evidence, note,
    operator, decided_at, op_version, undoes) VALUES
 (1, 8, 'not_applied', 'unknown', 'not_applied', NULL, 'ticket 12', 'checked', 'ana',
    '2026-05-31T00:00:00Z', 1, NULL),
 (2, 9, 'retry_same_key', 'exhausted', 'retry_pending', NULL, NULL, NULL, 'bo',
    '2026-06-01T11:00:00Z', 4, NULL),
 (3, 2, 'applied', 'unknown', 'completed', 'r-2', 'bank says yes', NULL, 'ana',
    '2026-06-01T11:59:00Z', 0, NULL),
 (4, 8, 'reopen', 'not_applied', 'unknown', NULL, NULL, 'oops', 'cy',
    '2026-06-01T11:59:30Z', 2, 1),
 (5, 8, 'not_applied', 'unknown', 'not_applied', NULL, 'ticket 13', NULL, 'cy',
    '2026-06-01T11:59:40Z', 3, NULL);
INSERT INTO retry_requests (id, op_id, idem_key, requested_at, requested_by, status, decision_id)
VALUES (1, 9, 'k-9', '2026-06-01T11:00:00Z', 'bo', 'queued', 2);
"#;

/// The filters every read is compared on.
const FILTERS: &[&str] = &[
    "",
    "state:queue",
    "state:unknown,exhausted",
    "state:reserved",
    "state:unknown state:exhausted",
    "account:acme",
    "account:acme*",
    "account:*e",
    "account:b_x*",
    "account:a*,Z*",
    "key:k-1*",
    "type:charge",
    "attempts>1",
    "attempts:0",
    "attempts<=1 state:queue",
    "err:timeout",
    "err:RESET",
    "err:%_",
    "err:über",
    "acme",
    "ACME",
    "#3",
    "b_x",
    "\"/b/\"",
];

/// A service's columns in a locale's order (ICU's root locale sorts
/// `acme` before `Acme`; bytes put `A` first), so a comparison that forgets
/// to be byte-wise, as SQLite's is, shows here.
const LOCALE_COLUMNS: &str = r#"
ALTER TABLE operations ALTER COLUMN account TYPE text COLLATE "und-x-icu",
    ALTER COLUMN op_type TYPE text COLLATE "und-x-icu",
    ALTER COLUMN idem_key TYPE text COLLATE "und-x-icu";
ALTER TABLE events ALTER COLUMN event TYPE text COLLATE "und-x-icu";
ALTER TABLE attempts ALTER COLUMN error TYPE text COLLATE "und-x-icu";
"#;

struct Both {
    _dir: TempDir,
    sqlite: Sqlite,
    pg: Pg,
}

/// The ledger in both databases, or `None` without a PostgreSQL server.
fn both(name: &str) -> Option<Both> {
    let address = fresh_database(name)?;
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("ledger.db");
    drop(Sqlite::create(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(LEDGER)
        .unwrap();
    let (sqlite, _) = Sqlite::open(&path, Access::ReadOnly).unwrap();
    let mut service =
        postgres::Client::connect(address.to_str().unwrap(), postgres::NoTls).unwrap();
    service
        .batch_execute(&format!(
            "{SERVICE_TABLES}{CONSOLE_TABLES}{LOCALE_COLUMNS}{LEDGER}"
        ))
        .unwrap();
    let pg = Pg::connect_for_test(&address, true);
    Some(Both {
        _dir: dir,
        sqlite,
        pg,
    })
}

/// Every row of `query` in `sort`'s order, walked a page of 3 at a time
/// from the first row (or backwards from the last), as the console does.
fn walk(
    sorted_page: impl Fn(Seek<SortKey>) -> Vec<OperationRow>,
    sort: Sort,
    backwards: bool,
) -> Vec<OperationRow> {
    let mut all: Vec<OperationRow> = Vec::new();
    let mut seek = if backwards { Seek::Last } else { Seek::First };
    loop {
        let page = sorted_page(seek);
        assert!(page.len() <= 3);
        if page.is_empty() {
            break;
        }
        if backwards {
            seek = Seek::Before(sort.key_of(&page[0]));
            all.splice(0..0, page);
        } else {
            seek = Seek::After(sort.key_of(page.last().unwrap()));
            all.extend(page);
        }
        assert!(all.len() <= 13, "a page boundary repeated rows");
    }
    all
}

#[test]
fn pages_streams_and_counts_are_the_same_on_both_backends() {
    let Some(b) = both("same_pages") else { return };
    let mut sorts = Vec::new();
    for column in SortColumn::ALL {
        for descending in [true, false] {
            sorts.push(Sort { column, descending });
        }
    }
    assert_eq!(b.sqlite.count(&Query::default(), now()).unwrap(), 13);
    for filter in FILTERS {
        let query = Query::parse(filter).unwrap();
        let count = b.sqlite.count(&query, now()).unwrap();
        assert_eq!(
            b.pg.count(&query, now()).unwrap(),
            count,
            "count of {filter:?}"
        );
        for sort in &sorts {
            let sqlite_page = |seek| b.sqlite.sorted_page(&query, *sort, seek, 3, now()).unwrap();
            let pg_page = |seek| b.pg.sorted_page(&query, *sort, seek, 3, now()).unwrap();
            for backwards in [false, true] {
                let expected = walk(sqlite_page, *sort, backwards);
                assert_eq!(expected.len() as i64, count, "{filter:?} {sort} walks all");
                assert_eq!(
                    walk(pg_page, *sort, backwards),
                    expected,
                    "{filter:?} sorted {sort}, backwards: {backwards}"
                );
            }
            let (mut sqlite_rows, mut pg_rows) = (Vec::new(), Vec::new());
            let n = b
                .sqlite
                .for_each_sorted_row(&query, *sort, None, now(), &mut |r| {
                    sqlite_rows.push(r);
                    Ok(())
                })
                .unwrap();
            assert_eq!(n as usize, sqlite_rows.len());
            let n =
                b.pg.for_each_sorted_row(&query, *sort, None, now(), &mut |r| {
                    pg_rows.push(r);
                    Ok(())
                })
                .unwrap();
            assert_eq!(n as usize, pg_rows.len());
            assert_eq!(pg_rows, sqlite_rows, "stream of {filter:?} sorted {sort}");
        }
        for seek in [
            Seek::First,
            Seek::After(OperationId(7)),
            Seek::Before(OperationId(4)),
            Seek::Last,
        ] {
            assert_eq!(
                b.pg.page(&query, seek, 5, now()).unwrap(),
                b.sqlite.page(&query, seek, 5, now()).unwrap(),
                "page of {filter:?} at {seek:?}"
            );
        }
        assert_eq!(
            b.pg.clusters(&query, now(), 3).unwrap(),
            b.sqlite.clusters(&query, now(), 3).unwrap(),
            "clusters of {filter:?}"
        );
    }
    assert_eq!(
        b.pg.state_counts(now()).unwrap(),
        b.sqlite.state_counts(now()).unwrap()
    );
}

#[test]
fn details_lookups_and_the_audit_trail_are_the_same_on_both_backends() {
    let Some(b) = both("same_detail") else { return };
    for id in 1..=14 {
        let id = OperationId(id);
        match (b.sqlite.detail(id), b.pg.detail(id)) {
            (Ok(s), Ok(p)) => assert_eq!(p, s, "detail of {id}"),
            (Err(s), Err(p)) => assert_eq!(
                p.to_string()
                    .replace(&b.pg.shown.display().to_string(), "L"),
                s.to_string()
                    .replace(&b.sqlite.path().display().to_string(), "L")
            ),
            (s, p) => panic!("detail of {id}: sqlite {s:?}, postgres {p:?}"),
        }
    }
    for spec in [
        "3",
        " 7 ",
        "99",
        "Zeta/notify/a/b/c",
        "acme/charge/k-1",
        "acme/charge/nope",
        "nonsense",
    ] {
        let shown = |r: crate::error::Result<OperationId>, path: &std::path::Path| match r {
            Ok(id) => format!("ok {id}"),
            Err(e) => e.to_string().replace(&path.display().to_string(), "L"),
        };
        assert_eq!(
            shown(b.pg.resolve(spec), b.pg.path()),
            shown(b.sqlite.resolve(spec), b.sqlite.path()),
            "resolve {spec:?}"
        );
    }
    for (account, op_type, key) in [
        ("acme", "charge", "k-9"),
        ("Acme", "charge", "k-9"),
        ("Zeta", "notify", "a/b/c"),
    ] {
        assert_eq!(
            b.pg.operation_by_key(account, op_type, key).unwrap(),
            b.sqlite.operation_by_key(account, op_type, key).unwrap()
        );
    }
    for limit in [1, 2, 10] {
        for seek in [
            Seek::First,
            Seek::After(DecisionId(3)),
            Seek::Before(DecisionId(2)),
            Seek::Last,
        ] {
            assert_eq!(
                b.pg.audit_page(seek, limit).unwrap(),
                b.sqlite.audit_page(seek, limit).unwrap(),
                "audit page {seek:?} limit {limit}"
            );
            assert_eq!(
                b.pg.audit_count(seek).unwrap(),
                b.sqlite.audit_count(seek).unwrap()
            );
        }
    }
}
