//! Procrastinate's tables (`procrastinate_jobs`, its events and its
//! workers' heartbeats) read as settle's operations, as SQL only: the view
//! every list, count and filter runs over, and one job's attempts and
//! events. What each column means is written in `docs/job-queues.md`.

use super::engine::{EngineSql, EngineWrites};

/// One job as an operation, column by column. Each column the outer query
/// does not use is never computed (PostgreSQL pulls the subquery up, and
/// drops the worker join when nothing reads it), so a count reads the jobs
/// table alone. A `doing` job's lease ends 30 seconds after its worker's
/// last heartbeat, Procrastinate's own default `stalled_worker_timeout`;
/// a job whose worker row is gone (pruned as stalled) has none: stale.
macro_rules! view {
    () => {
        "(SELECT j.id, j.status AS engine_state,
            CASE j.status WHEN 'failed' THEN 'exhausted' WHEN 'doing' THEN 'reserved'
                WHEN 'succeeded' THEN 'completed' WHEN 'cancelled' THEN 'not_applied'
                WHEN 'aborted' THEN 'not_applied' ELSE j.status::text END AS state,
            j.queue_name::text AS account, j.task_name::text AS op_type,
            coalesce(j.queueing_lock, j.id::text) AS idem_key,
            'sha256:' || encode(sha256(convert_to(j.args::text, 'UTF8')), 'hex') AS fingerprint,
            j.args::text AS params,
            (SELECT count(*) FROM procrastinate_events e
                WHERE e.job_id = j.id AND e.type = 'started') AS attempts,
            (SELECT e.type::text FROM procrastinate_events e
                WHERE e.job_id = j.id ORDER BY e.id DESC LIMIT 1) AS last_event,
            NULL::text AS last_error, NULL::text AS result_id,
            CASE WHEN j.status = 'doing'
                THEN w.last_heartbeat + interval '30 seconds' END AS lease_expires_at,
            coalesce((SELECT e.at FROM procrastinate_events e
                WHERE e.job_id = j.id ORDER BY e.id LIMIT 1), j.scheduled_at) AS created_at,
            coalesce((SELECT e.at FROM procrastinate_events e
                WHERE e.job_id = j.id AND e.at IS NOT NULL ORDER BY e.id DESC LIMIT 1),
                j.scheduled_at) AS updated_at,
            j.xmin::text::bigint AS version
         FROM procrastinate_jobs j
         LEFT JOIN procrastinate_workers w ON w.id = j.worker_id) o"
    };
}

/// One job's attempts: each `started` event opens one, ended by the first
/// event after it that ends a run (before the next start). A start with no
/// end is in flight: running, or its worker died mid-call. Procrastinate
/// keeps no error text, so an attempt that failed says which event ended it.
const ATTEMPTS: &str = "WITH ev AS (
        SELECT e.id, e.type::text AS type, e.at FROM procrastinate_events e WHERE e.job_id = $1),
    starts AS (
        SELECT id, at, row_number() OVER (ORDER BY id) AS n, lead(id) OVER (ORDER BY id) AS next
        FROM ev WHERE type = 'started')
    SELECT $1::bigint, s.n, s.at, f.at,
        CASE WHEN f.type IS NULL THEN 'in_flight' WHEN f.type = 'succeeded' THEN 'success'
            ELSE 'error' END,
        CASE WHEN f.type <> 'succeeded' THEN 'ended by Procrastinate''s ' || f.type || ' event' END,
        NULL::text
    FROM starts s
    LEFT JOIN LATERAL (SELECT ev.at, ev.type FROM ev
        WHERE ev.id > s.id AND (s.next IS NULL OR ev.id < s.next)
          AND ev.type IN ('succeeded', 'failed', 'deferred_for_retry', 'aborted')
        ORDER BY ev.id LIMIT 1) f ON true
    ORDER BY s.n";

/// One job's events as its triggers wrote them, each with the attempt it
/// happened in (the `started` events up to it).
const EVENTS: &str = "SELECT e.id, e.job_id,
        nullif(count(*) FILTER (WHERE e.type = 'started') OVER (ORDER BY e.id), 0),
        e.at, e.type::text, NULL::text
    FROM procrastinate_events e WHERE e.job_id = $1 ORDER BY e.id";

/// Procrastinate, read in place.
pub(super) static SQL: EngineSql = EngineSql {
    name: "Procrastinate",
    jobs: "procrastinate_jobs",
    from: view!(),
    row_source: concat!(
        "SELECT o.id, o.state, o.account, o.op_type, o.idem_key, o.attempts,
            greatest(o.attempts, 1), o.last_event, o.last_error, o.result_id,
            o.lease_expires_at, o.created_at, o.updated_at, o.version, NULL::text FROM ",
        view!()
    ),
    operation: concat!(
        "SELECT o.id, o.account, o.op_type, o.idem_key, o.fingerprint, o.params, o.state,
            o.result_id, greatest(o.attempts, 1), NULL::timestamptz, o.lease_expires_at,
            NULL::timestamptz, o.created_at, o.updated_at, o.version FROM ",
        view!(),
        " WHERE o.id = $1"
    ),
    attempts: ATTEMPTS,
    events: EVENTS,
    attempt_errors: "(SELECT NULL::bigint AS op_id, NULL::text AS error WHERE false) a",
    queue_candidates: "o.engine_state IN ('failed', 'doing')",
    running: "doing",
    // Every change of a job's status writes an event (the engine's own
    // triggers): the newest event's id moves with each.
    data_version: "SELECT coalesce(max(id), 0) FROM procrastinate_events",
    writes: Some(&WRITES),
};

/// Procrastinate's own functions, as its admin and its worker call them.
/// Only a waiting or running job can be finished or cancelled, so a
/// `failed` one goes back to `todo` first (`procrastinate_retry_job_v2`)
/// under the decision's row lock, which the workers' fetch skips: no
/// worker takes it before the transaction ends it. Each step writes its
/// event through the engine's triggers.
static WRITES: EngineWrites = EngineWrites {
    lock: "SELECT 1 FROM procrastinate_jobs WHERE id = $1 FOR UPDATE",
    completed: &[
        "SELECT procrastinate_retry_job_v2(id, NULL, NULL, NULL, NULL)
         FROM procrastinate_jobs WHERE id = $1 AND status = 'failed'",
        "SELECT procrastinate_finish_job_v1($1, 'succeeded', false)",
    ],
    not_applied: &[
        "SELECT procrastinate_retry_job_v2($1, NULL, NULL, NULL, NULL)",
        "SELECT procrastinate_cancel_job_v1($1, false, false)",
    ],
    removed: None,
    retry: &["SELECT procrastinate_retry_job_v2($1, now(), NULL, NULL, NULL)"],
    after: "SELECT status::text, xmin::text::bigint FROM procrastinate_jobs WHERE id = $1",
    completed_word: "succeeded",
    not_applied_word: "cancelled",
    retry_word: "todo",
};
