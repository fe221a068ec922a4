//! Graphile Worker's `graphile_worker._private_jobs` (with its tasks and
//! named queues) read as settle's operations, as SQL only: the view every
//! list, count and filter runs over, one job's attempts and events (the
//! row keeps only its attempt count, last error and current lock), and a
//! decision through Graphile's own admin functions. Graphile deletes a
//! job that succeeded, so what remains is waiting, locked or failed.
//! What each column means is written in `docs/job-queues.md`.

use super::engine::{EngineSql, EngineWrites, operation, row_source};
use crate::store::postgres::WAL_POSITION;

/// The error text `permanently_fail_jobs` is given for a `not_applied`
/// decision: the job stays failed in Graphile's terms, and the view tells
/// it from a job Graphile gave up on by this text.
macro_rules! not_applied_error {
    () => {
        "settle: not applied (an operator decided so; see the settle audit trail)"
    };
}

/// How long a job may stay locked before it counts as its dead worker's:
/// the session's `settle.locked_after` (`--locked-after`), else four
/// hours, Graphile's own lock timeout.
macro_rules! locked_after {
    () => {
        "coalesce(nullif(current_setting('settle.locked_after', true), ''), '4 hours')::interval"
    };
}

/// One job as an operation, column by column (a column the outer query
/// does not use is never computed). Graphile keeps no state column: a
/// locked job is a worker's, one with no attempt left is failed (or
/// settle's `not_applied` where the error is settle's), one with attempts
/// left and an error waits for its retry. The lease ends `locked_after`
/// past the lock. The account is the named queue (`(none)` for a job that
/// runs in parallel), the key Graphile's `key` where it has one.
macro_rules! view {
    () => {
        concat!(
            "(SELECT j.id, w.word AS engine_state,
            CASE w.word WHEN 'failed' THEN 'exhausted' WHEN 'locked' THEN 'reserved'
                ELSE w.word END AS state,
            coalesce(q.queue_name, '(none)') AS account, t.identifier AS op_type,
            coalesce(j.key, j.id::text) AS idem_key,
            'sha256:' || encode(sha256(convert_to(j.payload::text, 'UTF8')), 'hex') AS fingerprint,
            j.payload::text AS params,
            j.attempts::bigint AS attempts, j.max_attempts::bigint AS max_attempts,
            CASE w.word WHEN 'locked' THEN 'attempted' WHEN 'failed' THEN 'failed'
                WHEN 'not_applied' THEN 'not_applied'
                ELSE CASE WHEN j.last_error IS NOT NULL THEN 'errored' ELSE 'inserted' END
                END AS last_event,
            j.last_error, NULL::text AS result_id,
            j.locked_at + ",
            locked_after!(),
            " AS lease_expires_at,
            j.created_at,
            greatest(j.created_at, j.updated_at, j.locked_at) AS updated_at,
            j.xmin::text::bigint AS version
         FROM graphile_worker._private_jobs j
         CROSS JOIN LATERAL (SELECT CASE WHEN j.locked_at IS NOT NULL THEN 'locked'
                WHEN j.attempts >= j.max_attempts AND j.last_error = '",
            not_applied_error!(),
            "' THEN 'not_applied'
                WHEN j.attempts >= j.max_attempts THEN 'failed'
                WHEN j.attempts > 0 THEN 'retryable'
                WHEN j.run_at > now() THEN 'scheduled'
                ELSE 'available' END AS word) w
         LEFT JOIN graphile_worker._private_tasks t ON t.id = j.task_id
         LEFT JOIN graphile_worker._private_job_queues q ON q.id = j.job_queue_id) o"
        )
    };
}

/// One job's attempts, 1 to `attempts`. Graphile keeps only the last
/// one's error and, while a worker holds the job, when and by whom it was
/// locked: an earlier attempt is an error with no text kept.
const ATTEMPTS: &str = "SELECT j.id, g.n::bigint,
        CASE WHEN g.n = j.attempts AND j.locked_at IS NOT NULL THEN j.locked_at
            ELSE j.updated_at END,
        CASE WHEN g.n = j.attempts AND j.locked_at IS NOT NULL THEN NULL ELSE j.updated_at END,
        CASE WHEN g.n = j.attempts AND j.locked_at IS NOT NULL THEN 'in_flight' ELSE 'error' END,
        CASE WHEN g.n = j.attempts AND j.locked_at IS NULL THEN j.last_error END,
        CASE WHEN g.n = j.attempts AND j.locked_by IS NOT NULL THEN 'run by ' || j.locked_by END
    FROM graphile_worker._private_jobs j
    CROSS JOIN generate_series(1, j.attempts::int) g(n)
    WHERE j.id = $1 ORDER BY g.n";

/// One job's events, told from its row: added, its last error, and the
/// lock a worker holds on it now.
const EVENTS: &str = "SELECT row_number() OVER (ORDER BY t.at, t.ord), $1::bigint, t.attempt,
        t.at, t.event, t.detail
    FROM (
        SELECT 0 AS ord, NULL::bigint AS attempt, j.created_at AS at, 'inserted' AS event,
            NULL::text AS detail
        FROM graphile_worker._private_jobs j WHERE j.id = $1
        UNION ALL
        SELECT 1, j.attempts::bigint, j.updated_at,
            CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'errored' END, j.last_error
        FROM graphile_worker._private_jobs j
        WHERE j.id = $1 AND j.last_error IS NOT NULL AND j.locked_at IS NULL
        UNION ALL
        SELECT 2, j.attempts::bigint, j.locked_at, 'attempted', 'locked by ' || j.locked_by
        FROM graphile_worker._private_jobs j WHERE j.id = $1 AND j.locked_at IS NOT NULL
    ) t ORDER BY 1";

/// Graphile Worker, read in place.
pub(super) static SQL: EngineSql = EngineSql {
    name: "Graphile Worker",
    jobs: "graphile_worker._private_jobs",
    from: view!(),
    row_source: row_source!(view!()),
    operation: operation!(view!()),
    attempts: ATTEMPTS,
    events: EVENTS,
    attempt_errors: "(SELECT j.id AS op_id, j.last_error AS error
        FROM graphile_worker._private_jobs j WHERE j.last_error IS NOT NULL) a",
    // A job with attempts left is Graphile's to run again: never queued.
    queue_candidates: "o.engine_state IN ('failed', 'locked')",
    running: "locked",
    // Graphile keeps no log of changes and deletes a finished job: the
    // server's WAL position moves with every commit, as for River.
    data_version: WAL_POSITION,
    writes: Some(&WRITES),
};

/// Graphile's admin functions pass over a locked job (a live worker's), so
/// a dead worker's lock is taken off first, as its `force_unlock_workers`
/// does (the named queue's lock, then the job's), for this job only and
/// under the decision's row lock, which the workers' fetch skips. A
/// worker that comes back finds its lock gone: its completion, which asks
/// for its own lock, changes nothing.
static WRITES: EngineWrites = EngineWrites {
    lock: "SELECT 1 FROM graphile_worker._private_jobs WHERE id = $1 FOR UPDATE",
    // `complete_jobs` deletes the job, as its worker does on success.
    completed: &[
        UNLOCK_QUEUE,
        UNLOCK_JOB,
        "SELECT graphile_worker.complete_jobs(ARRAY[$1::bigint])",
    ],
    // `permanently_fail_jobs`: no attempt left, settle's words as its error.
    not_applied: &[
        UNLOCK_QUEUE,
        UNLOCK_JOB,
        concat!(
            "SELECT graphile_worker.permanently_fail_jobs(ARRAY[$1::bigint], '",
            not_applied_error!(),
            "')"
        ),
    ],
    // `remove_job` (the operator's choice, `--remove-not-applied`): the
    // job is deleted by its key, as Graphile's `removeJob` does; a job
    // added without a key has none, stays, and the decision is refused.
    removed: Some(&[
        UNLOCK_QUEUE,
        UNLOCK_JOB,
        "SELECT graphile_worker.remove_job(j.key)
         FROM graphile_worker._private_jobs j WHERE j.id = $1 AND j.key IS NOT NULL",
    ]),
    // `reschedule_jobs`: due now, with room for one more attempt where it
    // had none left; Graphile's own worker runs it under its key.
    retry: &[
        UNLOCK_QUEUE,
        UNLOCK_JOB,
        "SELECT graphile_worker.reschedule_jobs(ARRAY[j.id], run_at := now(),
            max_attempts := greatest(j.max_attempts, j.attempts + 1))
         FROM graphile_worker._private_jobs j WHERE j.id = $1",
    ],
    // A deleted job (completed) reads `deleted`.
    after: concat!(
        "SELECT coalesce(o.engine_state, 'deleted'), coalesce(o.version, 0)
         FROM (SELECT 1) one LEFT JOIN ",
        view!(),
        " ON o.id = $1"
    ),
    completed_word: "deleted",
    not_applied_word: "not_applied",
    retry_word: "retryable",
};

/// The named queue's lock, where the job's worker holds it.
const UNLOCK_QUEUE: &str = "UPDATE graphile_worker._private_job_queues q
    SET locked_at = NULL, locked_by = NULL
    FROM graphile_worker._private_jobs j
    WHERE j.id = $1 AND q.id = j.job_queue_id AND q.locked_by = j.locked_by";

/// The job's own lock.
const UNLOCK_JOB: &str = "UPDATE graphile_worker._private_jobs
    SET locked_at = NULL, locked_by = NULL WHERE id = $1 AND locked_at IS NOT NULL";
