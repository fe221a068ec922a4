//! Oban's `oban_jobs` read as settle's operations, as SQL only: the view
//! every list, count and filter runs over, one job's attempts and events
//! (Oban keeps them on the row: `attempt`, `attempted_at`, `attempted_by`,
//! `errors`), and a decision in Oban's own terms. Oban writes its times as
//! UTC in `timestamp without time zone`, so each is read `AT TIME ZONE
//! 'UTC'`. What each column means is written in `docs/job-queues.md`.

use super::engine::{EngineSql, EngineWrites, operation, row_source};
use crate::store::postgres::WAL_POSITION;

/// One job as an operation, column by column (a column the outer query
/// does not use is never computed). An `executing` job's lease ends when
/// Oban's Lifeline would rescue it: an hour after its attempt started, its
/// default `rescue_after`. A `retryable` job with no attempt left will
/// never run again, so it is exhausted as a `discarded` one is. The key is
/// `meta ->> 'uniq_key'` where a unique job has one, else the job id.
macro_rules! view {
    () => {
        "(SELECT j.id, j.state AS engine_state,
            CASE WHEN j.state = 'discarded'
                    OR (j.state = 'retryable' AND j.attempt >= j.max_attempts) THEN 'exhausted'
                WHEN j.state = 'executing' THEN 'reserved'
                WHEN j.state = 'completed' THEN 'completed'
                WHEN j.state = 'cancelled' THEN 'not_applied'
                ELSE j.state::text END AS state,
            j.queue AS account, j.worker AS op_type,
            coalesce(j.meta ->> 'uniq_key', j.id::text) AS idem_key,
            'sha256:' || encode(sha256(convert_to(coalesce(j.args::text, 'null'), 'UTF8')), 'hex')
                AS fingerprint,
            j.args::text AS params,
            j.attempt::bigint AS attempts, j.max_attempts::bigint AS max_attempts,
            CASE WHEN j.state IN ('completed', 'discarded', 'cancelled') THEN j.state::text
                WHEN j.state = 'executing' THEN 'attempted'
                WHEN cardinality(j.errors) > 0 THEN 'errored' ELSE 'inserted' END AS last_event,
            j.errors[cardinality(j.errors)] ->> 'error' AS last_error,
            j.meta ->> 'settle_result_id' AS result_id,
            CASE WHEN j.state = 'executing'
                THEN (j.attempted_at AT TIME ZONE 'UTC') + interval '1 hour' END
                AS lease_expires_at,
            j.inserted_at AT TIME ZONE 'UTC' AS created_at,
            greatest(greatest(j.inserted_at, j.attempted_at, j.completed_at, j.discarded_at,
                j.cancelled_at) AT TIME ZONE 'UTC',
                (j.errors[cardinality(j.errors)] ->> 'at')::timestamptz) AS updated_at,
            j.xmin::text::bigint AS version
         FROM oban_jobs j) o"
    };
}

/// One job's attempts, 1 to `attempt`. Oban keeps when each failed one
/// ended and why (`errors`), and when the last one started and on which
/// node (`attempted_at`, `attempted_by`): an earlier attempt's start is not
/// kept, so it reads as its end. The last attempt ends with the job or is
/// still in flight.
const ATTEMPTS: &str = "SELECT j.id, g.n::bigint,
        CASE WHEN g.n = j.attempt THEN j.attempted_at AT TIME ZONE 'UTC'
            ELSE (er.x ->> 'at')::timestamptz END,
        CASE WHEN er.x IS NOT NULL THEN (er.x ->> 'at')::timestamptz
            WHEN g.n = j.attempt THEN
                coalesce(j.completed_at, j.discarded_at, j.cancelled_at) AT TIME ZONE 'UTC' END,
        CASE WHEN er.x IS NOT NULL THEN 'error'
            WHEN g.n = j.attempt AND j.state = 'completed' THEN 'success'
            WHEN g.n = j.attempt AND j.state IN ('executing', 'cancelled') THEN 'in_flight'
            ELSE 'error' END,
        er.x ->> 'error',
        CASE WHEN g.n = j.attempt AND cardinality(j.attempted_by) > 0
            THEN 'run by ' || array_to_string(j.attempted_by, ' ') END
    FROM oban_jobs j
    CROSS JOIN generate_series(1, j.attempt) g(n)
    LEFT JOIN LATERAL (SELECT x FROM unnest(j.errors) x
        WHERE (x ->> 'attempt')::int = g.n ORDER BY x ->> 'at' DESC LIMIT 1) er ON true
    WHERE j.id = $1 ORDER BY g.n";

/// One job's events, told from its row: inserted, each error, the last
/// attempt's start (and where it ran), and its end.
const EVENTS: &str = "SELECT row_number() OVER (ORDER BY t.at, t.ord), $1::bigint, t.attempt,
        t.at, t.event, t.detail
    FROM (
        SELECT 0 AS ord, NULL::bigint AS attempt, j.inserted_at AT TIME ZONE 'UTC' AS at,
            'inserted' AS event, NULL::text AS detail
        FROM oban_jobs j WHERE j.id = $1
        UNION ALL
        SELECT 2, (x ->> 'attempt')::bigint, (x ->> 'at')::timestamptz, 'errored', x ->> 'error'
        FROM oban_jobs j, unnest(j.errors) x WHERE j.id = $1
        UNION ALL
        SELECT 1, j.attempt::bigint, j.attempted_at AT TIME ZONE 'UTC', 'attempted',
            'on ' || array_to_string(j.attempted_by, ' ')
        FROM oban_jobs j WHERE j.id = $1 AND j.attempted_at IS NOT NULL
        UNION ALL
        SELECT 3, j.attempt::bigint,
            coalesce(j.completed_at, j.discarded_at, j.cancelled_at) AT TIME ZONE 'UTC',
            j.state::text, NULL
        FROM oban_jobs j WHERE j.id = $1
            AND coalesce(j.completed_at, j.discarded_at, j.cancelled_at) IS NOT NULL
    ) t ORDER BY 1";

/// Oban, read in place.
pub(super) static SQL: EngineSql = EngineSql {
    name: "Oban",
    jobs: "oban_jobs",
    from: view!(),
    row_source: row_source!(view!()),
    operation: operation!(view!()),
    attempts: ATTEMPTS,
    events: EVENTS,
    attempt_errors: "(SELECT j.id AS op_id, x ->> 'error' AS error
        FROM oban_jobs j, unnest(j.errors) x) a",
    // A `retryable` job with attempts left is Oban's to run: never queued.
    queue_candidates: "(o.engine_state IN ('discarded', 'executing')
        OR (o.engine_state = 'retryable' AND o.attempts >= o.max_attempts))",
    running: "executing",
    // Oban keeps no log of changes: the server's WAL position moves with
    // every commit, as for River.
    data_version: WAL_POSITION,
    writes: Some(&WRITES),
};

/// Oban's engine moves a job with plain updates (`Oban.Engines.Basic`);
/// a decision makes the same ones. Its producers fetch with `FOR UPDATE
/// SKIP LOCKED`, so the locked job is never picked up mid-decision.
static WRITES: EngineWrites = EngineWrites {
    lock: "SELECT 1 FROM oban_jobs WHERE id = $1 FOR UPDATE",
    // As the engine's `complete_job`, with settle's result id kept in `meta`.
    completed: &[
        "UPDATE oban_jobs SET state = 'completed', completed_at = timezone('UTC', now()),
            meta = CASE WHEN $2::text IS NULL THEN meta
                ELSE coalesce(meta, '{}') || jsonb_build_object('settle_result_id', $2::text) END
         WHERE id = $1",
    ],
    // As `Oban.cancel_job`: for an `executing` job, first the `pkill`
    // signal its producer listens for (sent at commit), then `cancelled`.
    // A `discarded` job, which `cancel_job` passes over, is cancelled too:
    // the decision says it will not run, not that Oban gave up on it.
    not_applied: &[
        "SELECT pg_notify(c.relnamespace::regnamespace::text || '.oban_signal',
            json_build_object('action', 'pkill', 'job_id', j.id)::text)
         FROM oban_jobs j, pg_class c
         WHERE c.oid = 'oban_jobs'::regclass AND j.id = $1 AND j.state = 'executing'",
        "UPDATE oban_jobs SET state = 'cancelled', cancelled_at = timezone('UTC', now())
         WHERE id = $1 AND state NOT IN ('cancelled', 'completed')",
    ],
    // As `Oban.retry_job`: available now, one more attempt allowed, the
    // end times cleared. An orphaned `executing` job, which `retry_job`
    // passes over, is made available as the Lifeline rescues one.
    removed: None,
    retry: &["UPDATE oban_jobs SET state = 'available',
            max_attempts = greatest(max_attempts, attempt + 1),
            scheduled_at = timezone('UTC', now()),
            completed_at = NULL, cancelled_at = NULL, discarded_at = NULL
         WHERE id = $1 AND state <> 'available'"],
    after: "SELECT state::text, xmin::text::bigint FROM oban_jobs WHERE id = $1",
    completed_word: "completed",
    not_applied_word: "cancelled",
    retry_word: "available",
};
