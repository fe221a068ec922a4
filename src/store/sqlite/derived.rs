//! The tables settle derives from the service's tables (per-operation
//! summaries, counts per state), the triggers that keep them current under
//! plain-SQL writes, and the statements that fill them on adoption. SQL
//! text only: [`super::schema`] decides when it runs.

/// Tables settle derives from the service's tables and keeps current with
/// triggers, so they stay right when a service writes with plain SQL: the
/// per-operation summary the list shows (instead of three subqueries per
/// row) and the count per state the header shows (instead of a GROUP BY over
/// the ledger).
pub(super) const DERIVED_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS settle_op_summary (
    op_id      INTEGER PRIMARY KEY,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    -- Which attempt and event the two columns above come from, so an insert
    -- updates them without looking at the operation's other rows.
    last_attempt  INTEGER,
    last_event    TEXT,
    last_event_id INTEGER
);
CREATE TABLE IF NOT EXISTS settle_state_counts (
    state TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Recomputes one operation's attempt count and last error (a few rows
/// through the attempts primary key), after an update or a delete. `{op}`
/// is `NEW.op_id` or `OLD.op_id`.
const SUMMARY_ATTEMPTS: &str =
    "INSERT INTO settle_op_summary (op_id, attempts, last_error, last_attempt)
    SELECT {op}, COUNT(*), error, MAX(attempt) FROM attempts WHERE op_id = {op}
    ON CONFLICT (op_id) DO UPDATE SET attempts = excluded.attempts,
        last_error = excluded.last_error, last_attempt = excluded.last_attempt;";

/// Recomputes one operation's last event (one row through settle_events_op).
const SUMMARY_EVENT: &str = "INSERT INTO settle_op_summary (op_id, last_event, last_event_id)
    SELECT {op}, event, MAX(id) FROM events WHERE op_id = {op}
    ON CONFLICT (op_id) DO UPDATE SET last_event = excluded.last_event,
        last_event_id = excluded.last_event_id;";

/// An inserted attempt, the common write: counted, and its error is the last
/// one unless an attempt with a higher number is already there. No reads of
/// the operation's other attempts.
const SUMMARY_ATTEMPT_INSERTED: &str =
    "INSERT INTO settle_op_summary (op_id, attempts, last_error, last_attempt)
    VALUES (NEW.op_id, 1, NEW.error, NEW.attempt)
    ON CONFLICT (op_id) DO UPDATE SET attempts = attempts + 1,
        last_error = CASE WHEN last_attempt IS NULL OR NEW.attempt >= last_attempt
            THEN NEW.error ELSE last_error END,
        last_attempt = max(coalesce(last_attempt, NEW.attempt), NEW.attempt);";

/// An inserted event: the last one unless a newer id is already there.
const SUMMARY_EVENT_INSERTED: &str =
    "INSERT INTO settle_op_summary (op_id, last_event, last_event_id)
    VALUES (NEW.op_id, NEW.event, NEW.id)
    ON CONFLICT (op_id) DO UPDATE SET
        last_event = CASE WHEN last_event_id IS NULL OR NEW.id >= last_event_id
            THEN NEW.event ELSE last_event END,
        last_event_id = max(coalesce(last_event_id, NEW.id), NEW.id);";

/// A NULL state is counted under '' (which reads back as a malformed state,
/// as the list reads the NULL itself): `settle_state_counts.state` cannot
/// hold NULL, and a trigger of settle's must never make a service's write
/// fail: the service owns the ledger, settle only watches it.
const COUNT_UP: &str = "INSERT INTO settle_state_counts (state, n)
    VALUES (coalesce(NEW.state, ''), 1)
    ON CONFLICT (state) DO UPDATE SET n = n + 1;";
const COUNT_DOWN: &str =
    "UPDATE settle_state_counts SET n = n - 1 WHERE state = coalesce(OLD.state, '');";

/// The count triggers whose text changed in schema 4 (a NULL state counted
/// under ''): a ledger adopted earlier has them under the same names, so the
/// migration drops them before [`triggers`] creates them again.
pub(super) const COUNT_TRIGGERS_BEFORE_4: [&str; 3] = [
    "settle_operations_insert",
    "settle_operations_update",
    "settle_operations_delete",
];

/// The triggers that keep the derived tables current, as (name, event, body).
pub(super) fn triggers() -> Vec<(&'static str, &'static str, String)> {
    let attempts = |op: &str| SUMMARY_ATTEMPTS.replace("{op}", op);
    let event = |op: &str| SUMMARY_EVENT.replace("{op}", op);
    vec![
        (
            "settle_attempts_insert",
            "AFTER INSERT ON attempts",
            SUMMARY_ATTEMPT_INSERTED.to_string(),
        ),
        (
            "settle_attempts_update",
            "AFTER UPDATE OF op_id, attempt, error ON attempts",
            format!(
                "{}
{}",
                attempts("OLD.op_id"),
                attempts("NEW.op_id")
            ),
        ),
        (
            "settle_attempts_delete",
            "AFTER DELETE ON attempts",
            attempts("OLD.op_id"),
        ),
        (
            "settle_events_insert",
            "AFTER INSERT ON events",
            SUMMARY_EVENT_INSERTED.to_string(),
        ),
        (
            "settle_events_update",
            "AFTER UPDATE OF op_id, event ON events",
            format!(
                "{}
{}",
                event("OLD.op_id"),
                event("NEW.op_id")
            ),
        ),
        (
            "settle_events_delete",
            "AFTER DELETE ON events",
            event("OLD.op_id"),
        ),
        (
            "settle_operations_insert",
            "AFTER INSERT ON operations",
            COUNT_UP.to_string(),
        ),
        (
            "settle_operations_update",
            "AFTER UPDATE OF state ON operations WHEN OLD.state IS NOT NEW.state",
            format!("{COUNT_DOWN}\n{COUNT_UP}"),
        ),
        (
            "settle_operations_delete",
            "AFTER DELETE ON operations",
            COUNT_DOWN.to_string(),
        ),
    ]
}

/// Fills the derived tables from what the service wrote so far (adoption, or
/// a migration from schema 1). Runs inside the migration's transaction.
pub(super) const FILL_DERIVED: &[(&str, &str)] = &[
    (
        "counting attempts per operation",
        // One MAX() in the aggregate: SQLite takes `error` from that row.
        "DELETE FROM settle_op_summary;
         INSERT INTO settle_op_summary (op_id, attempts, last_error, last_attempt)
             SELECT op_id, COUNT(*), error, MAX(attempt) FROM attempts GROUP BY op_id;",
    ),
    (
        "finding each operation's last event",
        "INSERT INTO settle_op_summary (op_id, last_event, last_event_id)
             SELECT op_id, event, MAX(id) FROM events GROUP BY op_id
             ON CONFLICT (op_id) DO UPDATE SET last_event = excluded.last_event,
                 last_event_id = excluded.last_event_id;",
    ),
    (
        "counting operations per state",
        "DELETE FROM settle_state_counts;
         INSERT INTO settle_state_counts (state, n)
             SELECT coalesce(state, ''), COUNT(*) FROM operations GROUP BY 1;",
    ),
];
