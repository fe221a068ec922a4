//! The job queues read in place, on a throwaway PostgreSQL cluster holding
//! each engine's schema (`tests/fixtures/jobqueue/`) and one job in each of
//! its states, put there as the engine puts them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use chrono::Utc;

use crate::domain::{DecisionDraft, DecisionKind, OperationId, Outcome, Seek, State};
use crate::error::Error;
use crate::query::Query;
use crate::store::ChainVerdict;
use crate::store::postgres::testing;
use crate::store::{Access, Ledger, OpenReport};

const PROCRASTINATE: &str = include_str!("../../../tests/fixtures/jobqueue/procrastinate.sql");
const PROCRASTINATE_JOBS: &str =
    include_str!("../../../tests/fixtures/jobqueue/procrastinate-jobs.sql");
const RIVER: &str = include_str!("../../../tests/fixtures/jobqueue/river.sql");
const RIVER_JOBS: &str = include_str!("../../../tests/fixtures/jobqueue/river-jobs.sql");

/// A fresh database holding `schema` and `jobs`; None when the machine has
/// no PostgreSQL (said loudly by the harness).
fn engine(hint: &str, schema: &str, jobs: &str) -> Option<PathBuf> {
    let db = testing::fresh_database(hint)?;
    let mut client = testing::connect(&db);
    client.batch_execute(schema).unwrap();
    client.batch_execute(jobs).unwrap();
    Some(db)
}

/// Every job as `(id, state, stale)`, in id order.
fn states(ledger: &Ledger, query: &Query) -> Vec<(i64, String, bool)> {
    let now = Utc::now();
    let mut rows = ledger.page(query, Seek::First, 100, now).unwrap();
    rows.reverse();
    rows.iter()
        .map(|r| {
            let stale =
                crate::domain::stale_reservation(&r.state, r.lease_expires_at.as_deref(), now);
            (r.id.0, r.state.as_str().to_string(), stale)
        })
        .collect()
}

fn owned(expected: &[(i64, &str, bool)]) -> Vec<(i64, String, bool)> {
    expected
        .iter()
        .map(|(id, s, stale)| (*id, s.to_string(), *stale))
        .collect()
}

#[test]
fn procrastinate_is_recognised_and_each_status_maps_to_its_state() {
    let Some(db) = engine("procrastinate states", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    let (ledger, report) = Ledger::open(&db, Access::ReadOnly).unwrap();
    assert!(ledger.path().to_string_lossy().ends_with("(Procrastinate)"));
    assert_eq!(report, OpenReport::default());
    let all = states(&ledger, &Query::default());
    assert_eq!(
        all,
        owned(&[
            (1, "exhausted", false),
            (2, "reserved", true),
            (3, "reserved", false),
            (4, "completed", false),
            (5, "not_applied", false),
            (6, "not_applied", false),
            (7, "todo", false),
        ])
    );
    // The queue: the failed job and the one whose worker stopped beating.
    let queue = states(&ledger, &Query::queue());
    assert_eq!(
        queue,
        owned(&[(1, "exhausted", false), (2, "reserved", true)])
    );
    assert_eq!(ledger.count(&Query::queue(), Utc::now()).unwrap(), 2);
    let counts = ledger.state_counts(Utc::now()).unwrap();
    assert_eq!((counts.total, counts.stale_reserved), (7, 1));
    assert!(counts.by_state.contains(&(State::Reserved, 2)));
}

#[test]
fn a_procrastinate_job_shows_its_attempts_and_events_from_the_engine() {
    let Some(db) = engine("procrastinate detail", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    let (ledger, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    // The queueing lock is the key; a job without one is keyed by its id.
    assert_eq!(ledger.resolve("payments/charge/charge-1").unwrap().0, 1);
    assert_eq!(ledger.resolve("payments/refund/2").unwrap().0, 2);
    let failed = ledger.detail(ledger.resolve("1").unwrap()).unwrap();
    let op = &failed.operation;
    assert_eq!(
        (op.account.as_str(), op.op_type.as_str()),
        ("payments", "charge")
    );
    assert_eq!(op.params.as_deref(), Some(r#"{"cents": 500, "order": 1}"#));
    assert!(op.fingerprint.starts_with("sha256:"), "{}", op.fingerprint);
    let outcomes: Vec<&Outcome> = failed.attempts.iter().map(|a| &a.outcome).collect();
    assert_eq!(outcomes, [&Outcome::Error, &Outcome::Error]);
    let events: Vec<&str> = failed.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        events,
        [
            "deferred",
            "started",
            "deferred_for_retry",
            "started",
            "failed"
        ]
    );
    assert_eq!(failed.events[4].attempt, Some(2));
    assert!(failed.history_malformed.is_empty(), "{failed:?}");
    // The stalled job's attempt never ended: in flight.
    let stalled = ledger.detail(ledger.resolve("2").unwrap()).unwrap();
    assert_eq!(stalled.attempts.len(), 1);
    assert_eq!(stalled.attempts[0].outcome, Outcome::InFlight);
}

#[test]
fn river_is_recognised_and_each_state_maps_to_its_state() {
    let Some(db) = engine("river states", RIVER, RIVER_JOBS) else {
        return;
    };
    let (ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(ledger.path().to_string_lossy().ends_with("(River)"));
    assert_eq!(
        states(&ledger, &Query::default()),
        owned(&[
            (1, "exhausted", false),
            (2, "reserved", true),
            (3, "reserved", false),
            (4, "completed", false),
            (5, "not_applied", false),
            (6, "available", false),
            (7, "retryable", false),
            (8, "scheduled", false),
            (9, "pending", false),
        ])
    );
    assert_eq!(
        states(&ledger, &Query::queue()),
        owned(&[(1, "exhausted", false), (2, "reserved", true)])
    );
    // Filters mean what they mean on a ledger: an attempt's error, a type.
    let timeouts = Query::parse("error:timeout type:charge").unwrap();
    let ids: Vec<i64> = states(&ledger, &timeouts).iter().map(|r| r.0).collect();
    assert_eq!(ids, [1, 7]);
    // The console reads a filter a slice of ids at a time, from the
    // engine's own ids: the whole table in one step here.
    assert!(ledger.filters_scan());
    let step = ledger.scan_step(&timeouts, None, 100, Utc::now()).unwrap();
    let found: Vec<i64> = step.rows.iter().map(|r| r.id.0).collect();
    assert_eq!((found, step.place.done()), (vec![7, 1], true));
}

#[test]
fn a_river_job_shows_its_attempts_from_its_errors() {
    let Some(db) = engine("river detail", RIVER, RIVER_JOBS) else {
        return;
    };
    let (ledger, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    // The unique key is River's hash, in hex.
    let id = ledger.resolve("payments/charge/0102abcd").unwrap();
    let discarded = ledger.detail(id).unwrap();
    let errors: Vec<Option<&str>> = discarded
        .attempts
        .iter()
        .map(|a| a.error.as_deref())
        .collect();
    assert_eq!(
        errors,
        [
            Some("connection reset by peer"),
            Some("timeout after 30s"),
            Some("timeout after 30s")
        ]
    );
    assert_eq!(discarded.operation.max_attempts, 3);
    let events: Vec<&str> = discarded.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        events,
        [
            "inserted",
            "errored",
            "errored",
            "attempted",
            "errored",
            "discarded"
        ]
    );
    assert!(discarded.history_malformed.is_empty(), "{discarded:?}");
    let done = ledger.detail(ledger.resolve("4").unwrap()).unwrap();
    assert_eq!(done.attempts[0].outcome, Outcome::Success);

    // A console watching sees River's executor move a job as soon as it
    // committed (the table's statistics would show it seconds later).
    let before = ledger.data_version().unwrap();
    let mut executor = testing::connect(&db);
    executor
        .execute("UPDATE river_job SET state = 'running' WHERE id = 6", &[])
        .unwrap();
    assert_ne!(ledger.data_version().unwrap(), before);
}

#[test]
fn a_decision_on_a_river_job_is_river_s_own_update_and_is_audited() {
    let Some(db) = engine("river decide", RIVER, RIVER_JOBS) else {
        return;
    };
    let (mut ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let now = Utc::now();
    let discarded = ledger.detail(OperationId(1)).unwrap().operation;
    ledger
        .record_decision(&draft(1, DecisionKind::Applied, discarded.version), now)
        .unwrap();
    let running = ledger.detail(OperationId(2)).unwrap().operation;
    ledger
        .record_decision(&draft(2, DecisionKind::NotApplied, running.version), now)
        .unwrap();
    let row = |id: i64| -> (String, Option<String>, bool) {
        let r = testing::connect(&db)
            .query_one(
                "SELECT state::text, metadata ->> 'settle_result_id', finalized_at IS NOT NULL
                 FROM river_job WHERE id = $1",
                &[&id],
            )
            .unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!(row(1), ("completed".into(), Some("ch_1".into()), true));
    assert_eq!(row(2), ("cancelled".into(), None, true));
    assert_eq!(row(3).0, "running", "a job not decided is left alone");
    let shown = ledger.detail(OperationId(1)).unwrap();
    assert_eq!(shown.operation.result_id.as_deref(), Some("ch_1"));
    assert_eq!(shown.decisions.len(), 1);
    assert!(matches!(
        ledger.verify_chain().unwrap(),
        ChainVerdict::Intact { decisions: 2, .. }
    ));
}

/// Tables outside the engine's and the catalogs: what settle added.
fn other_schemas(db: &std::path::Path) -> i64 {
    testing::connect(db)
        .query_one(
            "SELECT count(*) FROM pg_tables
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
               AND tablename NOT LIKE 'procrastinate%' AND tablename NOT LIKE 'river%'",
            &[],
        )
        .unwrap()
        .get(0)
}

fn draft(id: i64, kind: DecisionKind, version: i64) -> DecisionDraft {
    DecisionDraft {
        op_id: OperationId(id),
        kind,
        result_id: (kind == DecisionKind::Applied).then(|| "ch_1".to_string()),
        evidence: Some("the bank shows it".to_string()),
        note: None,
        override_committed: false,
        operator: "ann".to_string(),
        expected_version: version,
        undoes: None,
    }
}

fn status(db: &std::path::Path, id: i64) -> String {
    testing::connect(db)
        .query_one(
            "SELECT status::text FROM procrastinate_jobs WHERE id = $1",
            &[&id],
        )
        .unwrap()
        .get(0)
}

#[test]
fn a_decision_on_a_procrastinate_job_goes_through_the_engine_and_is_audited() {
    let Some(db) = engine("procrastinate decide", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    let (looked, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    drop(looked);
    assert_eq!(other_schemas(&db), 0, "reading adds nothing");
    let (mut ledger, report) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(!ledger.is_read_only());
    assert!(
        report.upgraded.is_some_and(|u| u.contains("settle schema")),
        "adopting makes settle's schema"
    );
    let outside_settle: i64 = testing::connect(&db)
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'
               AND tablename NOT LIKE 'procrastinate%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(outside_settle, 0, "nothing of settle's beside the engine's");
    let now = Utc::now();
    let failed = ledger.detail(OperationId(1)).unwrap().operation;

    // A version the operator did not see: refused, nothing written.
    let stale = ledger.record_decision(&draft(1, DecisionKind::Applied, failed.version + 1), now);
    assert!(
        matches!(stale, Err(Error::VersionConflict { .. })),
        "{stale:?}"
    );
    assert_eq!(status(&db, 1), "failed");

    let applied = ledger
        .record_decision(&draft(1, DecisionKind::Applied, failed.version), now)
        .unwrap();
    assert_eq!(applied.to_state, State::Completed);
    assert_eq!(status(&db, 1), "succeeded");

    let stalled = ledger.detail(OperationId(2)).unwrap().operation;
    ledger
        .record_decision(&draft(2, DecisionKind::NotApplied, stalled.version), now)
        .unwrap();
    assert_eq!(status(&db, 2), "cancelled");

    let shown = ledger.detail(OperationId(1)).unwrap();
    assert_eq!(shown.operation.state, State::Completed);
    assert_eq!(shown.decisions.len(), 1);
    assert_eq!(shown.decisions[0].result_id.as_deref(), Some("ch_1"));
    assert_eq!(ledger.audit_count(Seek::First).unwrap(), 2);
    assert!(matches!(
        ledger.verify_chain().unwrap(),
        ChainVerdict::Intact { decisions: 2, .. }
    ));
    // settle's rows are in its own schema, none among the engine's, and
    // the jobs left alone are as they were.
    let mut client = testing::connect(&db);
    let in_settle: i64 = client
        .query_one("SELECT count(*) FROM settle.decisions", &[])
        .unwrap()
        .get(0);
    assert_eq!(in_settle, 2);
    assert_eq!(status(&db, 3), "doing");
    assert_eq!(status(&db, 7), "todo");
    // The trail is append-only.
    assert!(
        client
            .batch_execute("DELETE FROM settle.decisions")
            .is_err()
    );
}

#[test]
fn a_settle_ledger_beside_a_job_queue_stays_settle_s() {
    let Some(db) = engine("ledger beside queue", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    drop(Ledger::create(&db).unwrap());
    let (ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    assert!(!ledger.is_read_only());
    assert!(!ledger.path().to_string_lossy().contains("Procrastinate"));
}

#[test]
fn a_same_key_retry_goes_back_to_the_engine_s_queue_and_its_worker_runs_it() {
    let Some(db) = engine("procrastinate retry", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    let (mut ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let now = Utc::now();
    let version = ledger.detail(OperationId(1)).unwrap().operation.version;
    // Procrastinate does not say whether `charge` is idempotent: refused.
    let unknown = ledger.record_decision(&draft(1, DecisionKind::RetrySameKey, version), now);
    assert!(matches!(unknown, Err(Error::Refused { .. })), "{unknown:?}");
    assert_eq!(status(&db, 1), "failed");

    let mut client = testing::connect(&db);
    client
        .batch_execute(
            "INSERT INTO settle.op_types (op_type, idempotent, description)
             VALUES ('charge', true, 'the bank dedupes on the queueing lock')",
        )
        .unwrap();
    let receipt = ledger
        .record_decision(&draft(1, DecisionKind::RetrySameKey, version), now)
        .unwrap();
    assert_eq!(receipt.to_state, State::RetryPending);
    assert_eq!(status(&db, 1), "todo");

    // The engine's worker takes it and it succeeds: the detail shows the
    // third attempt from the engine's events.
    client
        .batch_execute(
            "SELECT procrastinate_fetch_job_v2(NULL, 1);
             SELECT procrastinate_finish_job_v1(1, 'succeeded', false);",
        )
        .unwrap();
    let shown = ledger.detail(OperationId(1)).unwrap();
    assert_eq!(shown.operation.state, State::Completed);
    let outcomes: Vec<&Outcome> = shown.attempts.iter().map(|a| &a.outcome).collect();
    assert_eq!(
        outcomes,
        [&Outcome::Error, &Outcome::Error, &Outcome::Success]
    );
    assert_eq!(
        shown.retry_requests[0].progress.claimed_by.as_deref(),
        Some("Procrastinate's worker")
    );
}

#[test]
fn a_same_key_retry_makes_a_river_job_available_with_room_for_an_attempt() {
    let Some(db) = engine("river retry", RIVER, RIVER_JOBS) else {
        return;
    };
    let (mut ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let mut client = testing::connect(&db);
    client
        .batch_execute("INSERT INTO settle.op_types (op_type, idempotent) VALUES ('charge', true)")
        .unwrap();
    let version = ledger.detail(OperationId(1)).unwrap().operation.version;
    ledger
        .record_decision(&draft(1, DecisionKind::RetrySameKey, version), Utc::now())
        .unwrap();
    let row = client
        .query_one(
            "SELECT state::text, attempt::int, max_attempts::int, finalized_at IS NULL
             FROM river_job WHERE id = 1",
            &[],
        )
        .unwrap();
    let got: (String, i32, i32, bool) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(got, ("available".to_string(), 3, 4, true));
}

/// The engine's rows as text, to see a write of settle's left them be.
fn engine_rows(db: &std::path::Path) -> String {
    testing::connect(db)
        .query_one(
            "SELECT (SELECT string_agg(j::text, ';' ORDER BY j.id) FROM procrastinate_jobs j)
                 || (SELECT string_agg(e::text, ';' ORDER BY e.id) FROM procrastinate_events e)",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn a_drill_verdict_on_a_job_queue_is_kept_in_settle_s_schema_and_read_back() {
    let Some(db) = engine("procrastinate drill", PROCRASTINATE, PROCRASTINATE_JOBS) else {
        return;
    };
    let verdict = crate::domain::DrillVerdict {
        id: 0,
        op_type: "charge".to_string(),
        run: "20261201T170000".to_string(),
        drilled_at: "2026-12-01T17:00:00Z".to_string(),
        results: "drill-20261201T170000/results.json".to_string(),
        duplicate_case: None,
        duplicate_why: None,
        params_ignored: false,
        flaws: String::new(),
        operator: "ann".to_string(),
    };
    let (mut looked, _) = Ledger::open(&db, Access::ReadOnly).unwrap();
    let refused = looked.record_drill(&verdict).unwrap_err().to_string();
    assert!(refused.contains("read-only"), "{refused}");
    drop(looked);
    assert_eq!(other_schemas(&db), 0, "a refused verdict writes nothing");

    let before = engine_rows(&db);
    let (mut ledger, _) = Ledger::open(&db, Access::ReadWrite).unwrap();
    let id = ledger.record_drill(&verdict).unwrap();
    let read = ledger.latest_drill("charge").unwrap().unwrap();
    assert_eq!((read.id, read.run.as_str()), (id, "20261201T170000"));
    assert!(ledger.latest_drill("send_receipt").unwrap().is_none());
    assert_eq!(
        engine_rows(&db),
        before,
        "the engine's rows are as they were"
    );
    let mut client = testing::connect(&db);
    let schema: String = client
        .query_one(
            "SELECT schemaname::text FROM pg_tables WHERE tablename = 'settle_drills'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(schema, "settle");
    let changed = client.execute("DELETE FROM settle.settle_drills", &[]);
    assert!(changed.is_err(), "settle_drills is append-only");
}
