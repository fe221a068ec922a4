//! settle on River's `river_job` (the schema its migrations define,
//! `tests/fixtures/jobqueue/river.sql`) with jobs inserted by River's own
//! Python client (`riverqueue`, `tests/fixtures/jobqueue/river_insert.py`)
//! and moved as River's executor moves them: fetched to `running`, failed
//! to `retryable` then `discarded` with their errors appended, completed,
//! one taken by a client that has been gone for two hours. The statements
//! below are the ones River's driver issues for those steps (its
//! `JobGetAvailable`, `JobSetStateIfRunningMany`, `JobSchedule`), with
//! River's own parameters filled in. Needs the Python environment
//! `scripts/test` makes (skipped without it, failed with SETTLE_REQUIRE_PG=1).

use crate::kit::jobqueue;
use crate::kit::pg;
use crate::kit::py;

use crate::kit::*;
use jobqueue::*;
use py::Py;

/// River's fetch: the next available job of `queue`, locked (skipping
/// locked ones), is running its next attempt, started at `$3`, by `$2`.
const FETCH: &str = "WITH locked AS (
        SELECT id FROM river_job
        WHERE state = 'available' AND queue = $1 AND scheduled_at <= now()
        ORDER BY priority, scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    UPDATE river_job SET state = 'running', attempt = river_job.attempt + 1,
        attempted_at = $3, attempted_by = array_append(river_job.attempted_by, $2)
    FROM locked WHERE river_job.id = locked.id
    RETURNING river_job.id";

/// An attempt's error, as the executor records it on a running job: the
/// error appended, then retryable while attempts are left (to run again
/// now), else discarded and finalised.
const ERRORED: &str = "UPDATE river_job SET
        errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt,
            'error', $2::text, 'trace', '')),
        state = CASE WHEN attempt < max_attempts THEN 'retryable' ELSE 'discarded' END::river_job_state,
        finalized_at = CASE WHEN attempt < max_attempts THEN NULL ELSE now() END,
        scheduled_at = CASE WHEN attempt < max_attempts THEN now() ELSE scheduled_at END
    WHERE id = $1 AND state = 'running'";

/// A running job whose worker returned.
const COMPLETED: &str = "UPDATE river_job SET state = 'completed', finalized_at = now()
    WHERE id = $1 AND state = 'running'";

/// River's scheduler: retryable jobs whose time came are available again.
const SCHEDULE: &str = "UPDATE river_job SET state = 'available'
    WHERE state IN ('retryable', 'scheduled') AND scheduled_at <= now()";

struct River {
    client: postgres::Client,
}

impl River {
    fn fetch(&mut self, queue: &str, by: &str, ago: &str) -> i64 {
        let at = format!("SELECT now() - interval '{ago}'");
        let at: chrono::DateTime<chrono::Utc> = self.client.query_one(&at, &[]).unwrap().get(0);
        self.client
            .query_one(FETCH, &[&queue, &by, &at])
            .unwrap()
            .get(0)
    }

    fn errored(&mut self, id: i64, error: &str) {
        assert_eq!(self.client.execute(ERRORED, &[&id, &error]).unwrap(), 1);
        self.client.execute(SCHEDULE, &[]).unwrap();
    }

    fn completed(&mut self, id: i64) {
        assert_eq!(self.client.execute(COMPLETED, &[&id]).unwrap(), 1);
    }

    fn state(&mut self, id: i64) -> String {
        self.client
            .query_one("SELECT state::text FROM river_job WHERE id = $1", &[&id])
            .unwrap()
            .get(0)
    }

    fn ids_where(&mut self, condition: &str) -> Vec<i64> {
        let sql = format!("SELECT id FROM river_job WHERE {condition} ORDER BY id");
        let rows = self.client.query(&sql, &[]).unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }
}

/// Inserts jobs through River's Python client: `queue:kind:order:max`.
fn insert(py: &Py, specs: &[&str]) -> Vec<i64> {
    let out = py.run("river_insert", specs);
    stdout(&out).lines().map(|l| l.parse().unwrap()).collect()
}

/// River's client inserts, the executor runs: returns the jobs' ids.
fn run_the_engine(py: &Py, river: &mut River) -> Vec<i64> {
    let jobs = insert(
        py,
        &[
            "payments:charge:1:2",
            "payments:charge:2:2",
            "payments:refund:3:25",
            "payments:charge:4:1",
            "mail:receipt:5:25",
            "mail:receipt:6:25",
        ],
    );
    assert_eq!(jobs.len(), 6);
    assert_eq!(river.ids_where("state = 'available'"), jobs);
    // In River's order (priority, then when due): job 1 fails (retryable,
    // due again now, so behind the others), 2 succeeds, 3 is taken by a
    // client gone two hours since, 4 fails its only attempt, 1 fails its
    // last, 5 runs now.
    assert_eq!(river.fetch("payments", "client-a", "0s"), jobs[0]);
    river.errored(jobs[0], "timeout after 30s");
    assert_eq!(river.fetch("payments", "client-a", "0s"), jobs[1]);
    river.completed(jobs[1]);
    assert_eq!(river.fetch("payments", "client-gone", "2 hours"), jobs[2]);
    assert_eq!(river.fetch("payments", "client-a", "0s"), jobs[3]);
    river.errored(jobs[3], "timeout after 30s");
    assert_eq!(river.fetch("payments", "client-b", "0s"), jobs[0]);
    river.errored(jobs[0], "connection reset by peer");
    assert_eq!(river.fetch("mail", "client-a", "0s"), jobs[4]);
    assert_eq!(river.ids_where("state = 'discarded'"), [jobs[0], jobs[3]]);
    jobs
}

#[test]
fn settle_reads_and_decides_river_jobs_its_client_inserted() {
    let Some(db) = pg::fresh_database("river real") else {
        return;
    };
    let Some(py) = Py::new(&db, "riverqueue, sqlalchemy, psycopg") else {
        return;
    };
    let mut river = River {
        client: pg::connect(&db),
    };
    river
        .client
        .batch_execute(include_str!("../../fixtures/jobqueue/river.sql"))
        .unwrap();
    let jobs = run_the_engine(&py, &mut river);

    // The queue: the discarded jobs and the one past River's rescue
    // threshold, as River's own columns say.
    let engine = river.ids_where(
        "state = 'discarded' OR (state = 'running' AND attempted_at < now() - interval '1 hour')",
    );
    assert_eq!(queue(&db), engine);
    assert_eq!(engine, [jobs[0], jobs[2], jobs[3]]);

    // A discarded job's attempts are River's: each error where it ended.
    let shown = show(&db, &jobs[0].to_string());
    let attempts = attempt_lines(&shown);
    assert_eq!(attempts.len(), 2, "{shown}");
    assert!(attempts[0].contains("timeout after 30s"), "{shown}");
    assert!(attempts[1].contains("connection reset by peer"), "{shown}");
    assert!(attempts[1].contains("run by client-b"), "{shown}");
    assert!(show(&db, &jobs[2].to_string()).contains("reserved (stale"));

    let before = snapshot(&mut river.client, "river_job");

    // Applied: completed, settle's result id in River's metadata.
    decide(
        &db,
        &jobs[0].to_string(),
        &["--applied", "--result-id", "ch_1"],
    );
    let row = river
        .client
        .query_one(
            "SELECT state::text, metadata ->> 'settle_result_id', finalized_at IS NOT NULL
             FROM river_job WHERE id = $1",
            &[&jobs[0]],
        )
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1), row.get(2)),
        ("completed".into(), "ch_1".into(), true)
    );

    // Retry with the same key: available again with room for one more
    // attempt; River's executor fetches it like any job, and settle shows
    // the new attempt.
    river
        .client
        .execute(
            "INSERT INTO settle.op_types (op_type, idempotent) VALUES ('charge', true)",
            &[],
        )
        .unwrap();
    decide(
        &db,
        &jobs[3].to_string(),
        &["--retry-same-key", "--evidence", "the provider dedupes"],
    );
    assert_eq!(river.state(jobs[3]), "available");
    assert_eq!(river.fetch("payments", "client-a", "0s"), jobs[3]);
    let running = show(&db, &jobs[3].to_string());
    assert!(
        attempt_lines(&running)[1].contains("in_flight"),
        "{running}"
    );
    river.completed(jobs[3]);
    let shown = show(&db, &jobs[3].to_string());
    let attempts = attempt_lines(&shown);
    assert_eq!(attempts.len(), 2, "{shown}");
    assert!(
        attempts[1].starts_with("#2") && attempts[1].contains("success"),
        "{shown}"
    );

    // Not applied: cancelled, out of the queue.
    decide(
        &db,
        &jobs[2].to_string(),
        &["--not-applied", "--evidence", "never sent"],
    );
    assert_eq!(river.state(jobs[2]), "cancelled");
    assert_eq!(queue(&db), Vec::<i64>::new());

    audit_holds(&db, 3);

    // No job but the decided ones changed; the executor still runs jobs.
    let after = snapshot(&mut river.client, "river_job");
    only_decided_changed(before, after, &[jobs[0], jobs[2], jobs[3]]);
    assert_eq!(river.fetch("mail", "client-a", "0s"), jobs[5]);
    river.completed(jobs[5]);
}
