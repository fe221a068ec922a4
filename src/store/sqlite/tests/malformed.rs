//! Cells a careless service writes: times in every form judged alike, and
//! bad cells flagged on their row instead of hiding it.

use crate::store::backend::{History as _, Import as _, Reads as _};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use tempfile::TempDir;

use super::{Ledger, ids, insert_op, now};
use crate::domain::{Seek, State};
use crate::query::Query;
use crate::store::Access;

/// One instant written in each form a service uses: the
/// queue (SQL), the lease judgement, the deadline and the key expiry (the
/// rules) all read it as the same instant, on either side of now; text that
/// is not a time is flagged on the row, never judged silently.
#[test]
fn offset_sqlite_and_epoch_times_are_judged_alike_in_the_queue_and_the_rules() {
    use crate::domain::rules::{self, Rule, RuleCheck};
    use crate::domain::{DecisionKind, NewOperation, OpTypeContract, format_time};

    type Form = fn(DateTime<Utc>) -> String;
    let forms: [(&str, Form); 4] = [
        ("RFC 3339 Z", format_time),
        ("offset", |t| {
            t.with_timezone(&chrono::FixedOffset::east_opt(3 * 3600).unwrap())
                .to_rfc3339()
        }),
        ("SQLite", |t| t.format("%Y-%m-%d %H:%M:%S").to_string()),
        ("epoch", |t| t.timestamp().to_string()),
    ];
    let past = now() - chrono::Duration::hours(1);
    let future = now() + chrono::Duration::hours(1);
    let op = |key: String, op_type: &str, state: State| {
        NewOperation::builder("a", op_type, &key)
            .fingerprint("fp")
            .state(state)
            .created_at(format_time(now()))
            .updated_at(format_time(now()))
    };
    let mut ops = Vec::new();
    for (name, form) in forms {
        for (when, t) in [("past", past), ("future", future)] {
            let key = |role: &str| format!("{name}/{when}/{role}");
            ops.push(
                op(key("lease"), "idem", State::Reserved)
                    .lease_expires_at(form(t))
                    .build(),
            );
            ops.push(
                op(key("deadline"), "idem", State::Unknown)
                    .deadline_at(form(t))
                    .build(),
            );
            ops.push(
                op(key("key"), "idem", State::Unknown)
                    .key_expires_at(form(t))
                    .build(),
            );
            // The contract keeps keys an hour after created_at.
            ops.push(
                op(key("retention"), "kept", State::Unknown)
                    .created_at(form(t - chrono::Duration::hours(1)))
                    .build(),
            );
        }
    }
    ops.push(
        op("unreadable".into(), "idem", State::Reserved)
            .lease_expires_at("soon")
            .deadline_at("soon")
            .build(),
    );
    let contract = |op_type: &str, retention| OpTypeContract {
        op_type: op_type.into(),
        idempotent: true,
        key_retention_s: retention,
        description: None,
    };
    let dir = TempDir::new().unwrap();
    let mut ledger = Ledger::create(&dir.path().join("times.db")).unwrap();
    ledger
        .import(
            &ops,
            &[contract("idem", None), contract("kept", Some(3600))],
        )
        .unwrap();

    let rows = ledger
        .page(&Query::default(), Seek::First, 100, now())
        .unwrap();
    let queue = ledger
        .page(&Query::queue(), Seek::First, 100, now())
        .unwrap();
    let in_queue = |key: &str| queue.iter().any(|r| r.idem_key == key);
    let failed = |checks: &[RuleCheck], rule: Rule| {
        checks.iter().any(|c| c.rule == rule && c.verdict.is_fail())
    };
    for (name, _) in forms {
        for (when, passed) in [("past", true), ("future", false)] {
            let key = |role: &str| format!("{name}/{when}/{role}");
            let detail = |role: &str| {
                let id = ledger.resolve(&format!("a/idem/{}", key(role)));
                let id = id.or_else(|_| ledger.resolve(&format!("a/kept/{}", key(role))));
                ledger.detail(id.unwrap()).unwrap()
            };
            let case = format!("{name} {when}");
            let lease = detail("lease");
            assert_eq!(in_queue(&key("lease")), passed, "{case}: queue (SQL)");
            assert_eq!(
                lease.operation.in_queue(now()),
                passed,
                "{case}: queue (domain)"
            );
            let retry =
                |role: &str| rules::check_kind(DecisionKind::RetrySameKey, &detail(role), now());
            assert_eq!(
                failed(&retry("deadline"), Rule::DeadlineNotPassed),
                passed,
                "{case}"
            );
            assert_eq!(failed(&retry("key"), Rule::KeyNotExpired), passed, "{case}");
            assert_eq!(
                failed(&retry("retention"), Rule::KeyNotExpired),
                passed,
                "{case}"
            );
        }
    }
    let stale = queue.iter().filter(|r| r.state == State::Reserved).count();
    assert_eq!(stale, forms.len(), "one stale lease per form");
    let sound = rows.iter().filter(|r| r.idem_key != "unreadable");
    assert!(sound.clone().all(|r| r.malformed.is_empty()), "{rows:?}");
    assert_eq!(sound.count(), ops.len() - 1);

    // Not a time: flagged on the row, out of the queue, and the deadline
    // rule says so instead of guessing.
    let bad = rows.iter().find(|r| r.idem_key == "unreadable").unwrap();
    assert_eq!(bad.malformed.len(), 1, "{bad:?}");
    assert_eq!(bad.malformed[0].column, "lease_expires_at");
    assert!(bad.malformed[0].found.starts_with("not a time: \"soon\""));
    assert!(!in_queue("unreadable"));
    let detail = ledger.detail(bad.id).unwrap();
    let columns: Vec<&str> = detail
        .operation
        .malformed
        .iter()
        .map(|m| m.column)
        .collect();
    assert_eq!(columns, ["deadline_at", "lease_expires_at"]);
    let checks = rules::check_kind(DecisionKind::RetrySameKey, &detail, now());
    assert!(
        checks.iter().any(
            |c| c.rule == Rule::DeadlineNotPassed && c.verdict.text().contains("is not a time")
        ),
        "{checks:?}"
    );
}

/// The row source's columns a list row reads from `operations`.
const LIST_COLUMNS: [&str; 9] = [
    "account",
    "op_type",
    "idem_key",
    "state",
    "result_id",
    "max_attempts",
    "created_at",
    "updated_at",
    "version",
];

/// Bad cells a careless service can write with plain SQL.
const BAD_VALUES: [(&str, &str); 5] = [
    ("CAST(X'c3' AS TEXT)", "invalid UTF-8"),
    ("X'0001'", "BLOB"),
    ("NULL", "NULL"),
    ("'twelve'", "text"),
    ("1.5", "real"),
];

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(24))]

    /// Any bad cells, anywhere in the list's columns, of an unadopted or an
    /// adopted ledger: every row is listed, and a cell its column does not
    /// allow is flagged on its row by name.
    #[test]
    fn bad_cells_anywhere_never_hide_a_row(
        cells in proptest::collection::vec((0i64..6, 0usize..9, 0usize..5), 0..10),
        adopt in proptest::bool::ANY,
    ) {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("lax.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE operations (id INTEGER PRIMARY KEY, account TEXT, op_type TEXT,
               idem_key TEXT, fingerprint TEXT, params TEXT, state TEXT, result_id TEXT,
               max_attempts INTEGER, deadline_at TEXT, lease_expires_at TEXT,
               key_expires_at TEXT, created_at TEXT, updated_at TEXT, version INTEGER);
             CREATE TABLE attempts (op_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
               started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL, error TEXT,
               response TEXT, PRIMARY KEY (op_id, attempt));
             CREATE TABLE events (id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL,
               attempt INTEGER, at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT);",
        )
        .unwrap();
        for id in 1..=6 {
            insert_op(&conn, id, "acct", &format!("k-{id}"), "unknown", None);
        }
        let mut expected: Vec<(i64, &str)> = Vec::new();
        for (id, column, value) in &cells {
            let (sql_value, kind) = BAD_VALUES[*value];
            let column = LIST_COLUMNS[*column];
            conn.execute(
                &format!("UPDATE operations SET {column} = {sql_value} WHERE id = ?1"),
                [id + 1],
            )
            .unwrap();
            // Which of them the column allows: NULL where optional, any
            // text in a text column, a number as text or as epoch seconds.
            let integer = matches!(column, "max_attempts" | "version");
            let time = matches!(column, "created_at" | "updated_at");
            let allowed = match kind {
                "NULL" => column == "result_id",
                "text" => !integer && !time,
                "real" => !integer,
                _ => false,
            };
            expected.retain(|(i, c)| !(*i == id + 1 && *c == column));
            if !allowed {
                expected.push((id + 1, column));
            }
        }
        drop(conn);
        let access = if adopt { Access::ReadWrite } else { Access::ReadOnly };
        let (ledger, _) = Ledger::open(&path, access).unwrap();
        let rows = ledger.page(&Query::default(), Seek::First, 100, now()).unwrap();
        proptest::prop_assert_eq!(ids(&rows), vec![6, 5, 4, 3, 2, 1]);
        for row in &rows {
            let mut flagged: Vec<&str> = row.malformed.iter().map(|m| m.column).collect();
            let mut want: Vec<&str> = expected
                .iter()
                .filter(|(i, _)| *i == row.id.0)
                .map(|(_, c)| *c)
                .collect();
            flagged.sort_unstable();
            want.sort_unstable();
            proptest::prop_assert_eq!(flagged, want, "row {}", row.id);
            let detail = ledger.detail(row.id).unwrap();
            let identity = detail.operation.malformed_identity().is_some();
            let bad_identity = row.malformed.iter().any(|m| {
                crate::domain::Malformed::IDENTITY.contains(&m.column)
            });
            proptest::prop_assert_eq!(identity, bad_identity);
        }
    }
}
