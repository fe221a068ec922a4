//! The columns a ledger must have and the ones settle adds: the lists
//! [`super::schema`] validates a file against and migrates it with. Names
//! only; no statement runs here.

/// Columns every ledger-v1 table must have, for validation. `extra_attempt`
/// is the console's own addition and is added by adoption when missing.
pub(crate) const REQUIRED_COLUMNS: &[(&str, &[&str])] = &[
    (
        "operations",
        &[
            "id",
            "account",
            "op_type",
            "idem_key",
            "fingerprint",
            "params",
            "state",
            "result_id",
            "max_attempts",
            "deadline_at",
            "lease_expires_at",
            "key_expires_at",
            "created_at",
            "updated_at",
            "version",
        ],
    ),
    (
        "attempts",
        &[
            "op_id",
            "attempt",
            "started_at",
            "ended_at",
            "outcome",
            "error",
            "response",
        ],
    ),
    (
        "events",
        &["id", "op_id", "attempt", "at", "event", "detail"],
    ),
    (
        "decisions",
        &[
            "id",
            "op_id",
            "decision",
            "from_state",
            "to_state",
            "result_id",
            "evidence",
            "note",
            "operator",
            "decided_at",
            "op_version",
            "undoes",
        ],
    ),
    (
        "retry_requests",
        &[
            "id",
            "op_id",
            "idem_key",
            "requested_at",
            "requested_by",
            "status",
            "decision_id",
        ],
    ),
    (
        "op_types",
        &["op_type", "idempotent", "key_retention_s", "description"],
    ),
];

/// Columns settle adds to `decisions`, with their definition for a ledger
/// whose table lacks them.
const SETTLE_DECISION_COLUMNS: [(&str, &str); 2] = [
    ("extra_attempt", "INTEGER NOT NULL DEFAULT 0"),
    ("chain_hash", "TEXT"),
];

/// Columns a worker of settle's keeps in `retry_requests` (schema 5): who
/// claimed a request, until when, how often it ran, how it ended. The
/// contract leaves a worker's own columns unguarded.
const SETTLE_RETRY_COLUMNS: [(&str, &str); 5] = [
    ("claimed_by", "TEXT"),
    ("claim_expires_at", "TEXT"),
    ("runs", "INTEGER NOT NULL DEFAULT 0"),
    ("finished_at", "TEXT"),
    ("outcome", "TEXT"),
];

/// The settle columns each console table needs beyond the contract's.
pub(super) const SETTLE_COLUMNS: [(&str, &[(&str, &str)]); 2] = [
    ("decisions", &SETTLE_DECISION_COLUMNS),
    ("retry_requests", &SETTLE_RETRY_COLUMNS),
];
