//! What settle adds to a PostgreSQL ledger besides tables: the `settle_*`
//! indexes for keyset paging on its own tables, and the triggers that keep the
//! audit trail append-only (the same refusals, word for word, as SQLite's in
//! `sqlite/chain.rs`), on settle's own tables only. No trigger of settle's
//! sits on a service's table: a service's write runs nothing of settle's.
//! Statements as text only; runs nothing.

/// The change-notification triggers schema 1 put on every ledger table,
/// with their table, which adoption now drops: a transaction that ran
/// `pg_notify` takes a database-wide lock at commit, so every committer
/// of the service waited for the others. The console asks the server's
/// WAL position instead ([`crate::store::postgres::live`]).
pub(crate) const RETIRED_TRIGGERS: [(&str, &str); 5] = [
    ("settle_notify_operations", "operations"),
    ("settle_notify_attempts", "attempts"),
    ("settle_notify_events", "events"),
    ("settle_notify_decisions", "decisions"),
    ("settle_notify_retry_requests", "retry_requests"),
];

/// The function the retired triggers called; dropped after them.
pub(crate) const RETIRED_FUNCTION: &str = "settle_notify()";

/// Indexes schema 1 put on `operations` for the filters (`state:`,
/// `account:`, `type:`, `key:`, and reserved leases), which adoption now
/// drops: every one of them is written by each of the service's inserts,
/// and the one on `state` made its every completion a non-HOT update
/// (their cost to the write path: docs/benchmarks.md, *Behind the code*).
/// Those filters now walk the queue's table or the primary key in id order.
/// The partial queue index went for the same reason as the one on
/// `state`; settle's own table holds the queue ([`super::queue`]). The
/// one on `events (op_id, id)` was written by every event the service
/// inserted; settle's own table finds each operation's events
/// ([`super::event_ops`]), and adoption drops it once that is whole.
pub(crate) const RETIRED_INDEXES: [&str; 7] = [
    "settle_events_op",
    "settle_operations_queue",
    "settle_operations_state",
    "settle_operations_account",
    "settle_operations_type",
    "settle_operations_key",
    "settle_operations_reserved_lease",
];

/// Indexes with a fixed definition, on settle's own tables only, whose
/// writes are settle's: none on a service's table.
const INDEXES: &[(&str, &str)] = &[
    ("settle_decisions_op", "decisions (op_id, id)"),
    ("settle_retry_requests_op", "retry_requests (op_id, id)"),
    (
        "settle_retry_requests_status",
        "retry_requests (status, id)",
    ),
    ("settle_probes_op", "settle_probes (op_id, id)"),
];

/// Every `settle_*` index with its definition.
pub(crate) fn indexes() -> Vec<(&'static str, String)> {
    INDEXES
        .iter()
        .map(|(name, on)| (*name, (*on).to_string()))
        .collect()
}

/// The functions the triggers call. `settle_refuse` raises its argument,
/// so each refusal's text sits beside its trigger.
pub(crate) const FUNCTIONS: &str = r#"
CREATE OR REPLACE FUNCTION settle_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0];
END $$;
CREATE OR REPLACE FUNCTION settle_retry_requests_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.op_id IS DISTINCT FROM OLD.op_id
        OR NEW.idem_key IS DISTINCT FROM OLD.idem_key
        OR NEW.requested_at IS DISTINCT FROM OLD.requested_at
        OR NEW.requested_by IS DISTINCT FROM OLD.requested_by
        OR NEW.decision_id IS DISTINCT FROM OLD.decision_id THEN
        RAISE EXCEPTION 'retry_requests are append-only: only status may change';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
        AND NOT ((OLD.status = 'queued' AND NEW.status IN ('claimed', 'done', 'failed', 'cancelled'))
              OR (OLD.status = 'claimed' AND NEW.status IN ('done', 'failed'))) THEN
        RAISE EXCEPTION 'retry_requests status only moves forward: queued -> claimed -> done or failed, or queued -> cancelled';
    END IF;
    RETURN NEW;
END $$;
"#;

const NO_EDIT: &str = "decisions are append-only: a decision is corrected by a later decision (settle decide --reopen), never edited";
const NO_DELETE: &str = "decisions are append-only: nothing is ever deleted from the audit trail";
const NO_PROBE_EDIT: &str = "probes are append-only: a receiver asked again is a new probe";
const NO_PROBE_DELETE: &str = "probes are append-only: nothing is ever deleted from the evidence";
const NO_RETRY_DELETE: &str =
    "retry_requests are append-only: cancel a queued request with settle decide --cancel-retry";

/// The append-only triggers: name, table, and what fires them. TRUNCATE
/// skips row triggers, so it has its own.
fn append_only() -> Vec<(&'static str, &'static str, String)> {
    let refuse = |when: &str, why: &str| {
        format!(
            "{when} EXECUTE FUNCTION settle_refuse('{}')",
            why.replace('\'', "''")
        )
    };
    vec![
        (
            "settle_decisions_no_update",
            "decisions",
            refuse("BEFORE UPDATE ON decisions FOR EACH ROW", NO_EDIT),
        ),
        (
            "settle_decisions_no_delete",
            "decisions",
            refuse("BEFORE DELETE ON decisions FOR EACH ROW", NO_DELETE),
        ),
        (
            "settle_decisions_no_truncate",
            "decisions",
            refuse("BEFORE TRUNCATE ON decisions FOR EACH STATEMENT", NO_DELETE),
        ),
        (
            "settle_retry_requests_no_delete",
            "retry_requests",
            refuse(
                "BEFORE DELETE ON retry_requests FOR EACH ROW",
                NO_RETRY_DELETE,
            ),
        ),
        (
            "settle_retry_requests_no_truncate",
            "retry_requests",
            refuse(
                "BEFORE TRUNCATE ON retry_requests FOR EACH STATEMENT",
                NO_RETRY_DELETE,
            ),
        ),
        (
            "settle_probes_no_update",
            "settle_probes",
            refuse("BEFORE UPDATE ON settle_probes FOR EACH ROW", NO_PROBE_EDIT),
        ),
        (
            "settle_probes_no_delete",
            "settle_probes",
            refuse(
                "BEFORE DELETE ON settle_probes FOR EACH ROW",
                NO_PROBE_DELETE,
            ),
        ),
        (
            "settle_probes_no_truncate",
            "settle_probes",
            refuse(
                "BEFORE TRUNCATE ON settle_probes FOR EACH STATEMENT",
                NO_PROBE_DELETE,
            ),
        ),
        (
            "settle_retry_requests_fixed",
            "retry_requests",
            "BEFORE UPDATE ON retry_requests FOR EACH ROW \
             EXECUTE FUNCTION settle_retry_requests_guard()"
                .to_string(),
        ),
    ]
}

/// The functions and append-only triggers of settle's own tables, for a
/// schema of settle's beside another application's tables (a job queue's),
/// where nothing else of a ledger's objects applies.
pub(crate) fn console_objects() -> String {
    let mut sql = FUNCTIONS.to_string();
    for (name, _table, body) in append_only() {
        sql.push_str(&format!("CREATE TRIGGER {name} {body};\n"));
    }
    sql
}

/// Every trigger settle installs: its name and the statement that creates
/// it. Adoption creates only the missing ones: replacing one that exists
/// (DROP, or CREATE OR REPLACE TRIGGER, which PostgreSQL before 14 lacks)
/// would lock the table against every reader.
pub(crate) fn triggers() -> Vec<(String, String)> {
    append_only()
        .into_iter()
        .map(|(name, _table, body)| {
            let sql = format!("CREATE TRIGGER {name} {body}");
            (name.to_string(), sql)
        })
        .collect()
}

/// The names of every index and trigger settle installs, to tell whether a
/// ledger has them all.
pub(crate) fn names() -> Vec<String> {
    indexes()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .chain(triggers().into_iter().map(|(n, _)| n))
        .collect()
}
