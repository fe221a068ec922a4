//! River's `river_job` read as settle's operations, as SQL only: the view
//! every list, count and filter runs over, and one job's attempts and
//! events, which River keeps on the row itself (`attempt`, `attempted_at`,
//! `attempted_by`, `errors`). What each column means is written in
//! `docs/job-queues.md`.

use super::engine::{EngineSql, EngineWrites, operation, row_source};
use crate::store::postgres::WAL_POSITION;

/// One job as an operation, column by column (a column the outer query
/// does not use is never computed). A `running` job's lease ends when
/// River's rescuer would take it back: an hour after its attempt started,
/// River's default `RescueStuckJobsAfter`. The key is `unique_key` in hex
/// (River keeps a hash there, never text), else the job id.
macro_rules! view {
    () => {
        "(SELECT j.id, j.state AS engine_state,
            CASE j.state WHEN 'discarded' THEN 'exhausted' WHEN 'running' THEN 'reserved'
                WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'not_applied'
                ELSE j.state::text END AS state,
            j.queue AS account, j.kind AS op_type,
            coalesce(encode(j.unique_key, 'hex'), j.id::text) AS idem_key,
            'sha256:' || encode(sha256(convert_to(coalesce(j.args::text, 'null'), 'UTF8')), 'hex')
                AS fingerprint,
            j.args::text AS params,
            j.attempt::bigint AS attempts, j.max_attempts::bigint AS max_attempts,
            CASE WHEN j.finalized_at IS NOT NULL THEN j.state::text
                WHEN j.state = 'running' THEN 'attempted'
                WHEN cardinality(j.errors) > 0 THEN 'errored' ELSE 'inserted' END AS last_event,
            j.errors[cardinality(j.errors)] ->> 'error' AS last_error,
            j.metadata ->> 'settle_result_id' AS result_id,
            CASE WHEN j.state = 'running'
                THEN j.attempted_at + interval '1 hour' END AS lease_expires_at,
            j.created_at,
            greatest(j.created_at, j.attempted_at, j.finalized_at,
                (j.errors[cardinality(j.errors)] ->> 'at')::timestamptz) AS updated_at,
            j.xmin::text::bigint AS version
         FROM river_job j) o"
    };
}

/// One job's attempts, 1 to `attempt`. River keeps when each failed one
/// ended and why (`errors`), and when the last one started: an earlier
/// attempt's start is not kept, so it reads as its end. The last attempt
/// ends with the job (`finalized_at`) or is still in flight.
const ATTEMPTS: &str = "SELECT j.id, g.n::bigint,
        CASE WHEN g.n = j.attempt THEN j.attempted_at ELSE (er.x ->> 'at')::timestamptz END,
        CASE WHEN er.x IS NOT NULL THEN (er.x ->> 'at')::timestamptz
            WHEN g.n = j.attempt THEN j.finalized_at END,
        CASE WHEN er.x IS NOT NULL THEN 'error'
            WHEN g.n = j.attempt AND j.state = 'completed' THEN 'success'
            WHEN g.n = j.attempt AND j.state IN ('running', 'cancelled') THEN 'in_flight'
            ELSE 'error' END,
        er.x ->> 'error',
        CASE WHEN j.attempted_by[g.n] IS NOT NULL THEN 'run by ' || j.attempted_by[g.n] END
    FROM river_job j
    CROSS JOIN generate_series(1, j.attempt::int) g(n)
    LEFT JOIN LATERAL (SELECT x FROM unnest(j.errors) x
        WHERE (x ->> 'attempt')::int = g.n ORDER BY x ->> 'at' DESC LIMIT 1) er ON true
    WHERE j.id = $1 ORDER BY g.n";

/// One job's events, told from its row: inserted, each error, the last
/// attempt's start (and who ran it), and its end.
const EVENTS: &str = "SELECT row_number() OVER (ORDER BY t.at, t.ord), $1::bigint, t.attempt,
        t.at, t.event, t.detail
    FROM (
        SELECT 0 AS ord, NULL::bigint AS attempt, j.created_at AS at, 'inserted' AS event,
            NULL::text AS detail
        FROM river_job j WHERE j.id = $1
        UNION ALL
        SELECT 2, (x ->> 'attempt')::bigint, (x ->> 'at')::timestamptz, 'errored', x ->> 'error'
        FROM river_job j, unnest(j.errors) x WHERE j.id = $1
        UNION ALL
        SELECT 1, j.attempt::bigint, j.attempted_at, 'attempted',
            'by ' || j.attempted_by[cardinality(j.attempted_by)]
        FROM river_job j WHERE j.id = $1 AND j.attempted_at IS NOT NULL
        UNION ALL
        SELECT 3, j.attempt::bigint, j.finalized_at, j.state::text, NULL
        FROM river_job j WHERE j.id = $1 AND j.finalized_at IS NOT NULL
    ) t ORDER BY 1";

/// River, read in place.
pub(super) static SQL: EngineSql = EngineSql {
    name: "River",
    jobs: "river_job",
    from: view!(),
    row_source: row_source!(view!()),
    operation: operation!(view!()),
    attempts: ATTEMPTS,
    events: EVENTS,
    attempt_errors: "(SELECT j.id AS op_id, x ->> 'error' AS error
        FROM river_job j, unnest(j.errors) x) a",
    queue_candidates: "o.engine_state IN ('discarded', 'running')",
    running: "running",
    // River keeps no log of changes, and the table's statistics lag a
    // commit by a second, or ten while the writer is idle: the server's WAL
    // position moves with the commit, as for a PostgreSQL ledger (any
    // write to the database moves it, so a console may reread for nothing).
    data_version: WAL_POSITION,
    writes: Some(&WRITES),
};

/// River has no functions: its client's own updates, as its executor
/// completes a job, `JobCancel` cancels one and `JobRetry` makes one
/// available again, with settle's result id kept in `metadata`. River's fetch skips a
/// locked job, and its executor completes a job only while it is still
/// `running`, so a rescued or late worker never undoes the decision.
static WRITES: EngineWrites = EngineWrites {
    lock: "SELECT 1 FROM river_job WHERE id = $1 FOR UPDATE",
    completed: &[
        "UPDATE river_job SET state = 'completed', finalized_at = now(),
            metadata = CASE WHEN $2::text IS NULL THEN metadata
                ELSE metadata || jsonb_build_object('settle_result_id', $2::text) END
         WHERE id = $1",
    ],
    not_applied: &["UPDATE river_job SET state = 'cancelled', finalized_at = now() WHERE id = $1"],
    // As River's `JobRetry`: available now, unfinalised, with room for one
    // more attempt where it had none left.
    removed: None,
    retry: &[
        "UPDATE river_job SET state = 'available', scheduled_at = now(),
            finalized_at = NULL, max_attempts = greatest(max_attempts, attempt + 1)
         WHERE id = $1",
    ],
    after: "SELECT state::text, xmin::text::bigint FROM river_job WHERE id = $1",
    completed_word: "completed",
    not_applied_word: "cancelled",
    retry_word: "available",
};
