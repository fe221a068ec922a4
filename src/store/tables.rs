//! settle's tables and the columns a ledger must have, whichever database
//! holds it: names only, which every backend checks its schema against.

/// Which of settle's own tables a ledger holds, read once when it opens
/// (and again by `reinspect`), so reads leave out what is not there
/// instead of asking the database on every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    /// `decisions`, `retry_requests` and `op_types` (a read-only look at a
    /// service's ledger that was never adopted has none).
    pub console: bool,
    /// `settle_probes` and the worker's `retry_requests` columns (SQLite
    /// schema 5; every adopted PostgreSQL ledger).
    pub worker: bool,
}

impl Tables {
    /// A writable ledger: opening it adopted or migrated whatever lacked.
    pub(crate) const ALL: Tables = Tables {
        console: true,
        worker: true,
    };
}

/// The tables the console adds to a service's ledger.
pub(crate) const CONSOLE_TABLE_NAMES: [&str; 3] = ["decisions", "retry_requests", "op_types"];

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
