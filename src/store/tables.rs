//! settle's tables and the columns a ledger must have, whichever database
//! holds it: names only, which every backend checks its schema against.

use std::path::Path;

use crate::error::{Error, Result};

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

/// How a backend names its ledger in a refusal of its schema.
pub(crate) struct LedgerWords {
    /// What holds the ledger: "database", "file".
    pub holder: &'static str,
    /// What the operator gave to reach it: "address", "path".
    pub locator: &'static str,
    /// Where the operator reads ledger-v1's tables.
    pub contract: &'static str,
}

/// Checks every ledger-v1 table's columns, as `columns` reads them (none
/// where the table is missing), against [`REQUIRED_COLUMNS`]: a missing
/// service table or column is refused in `words`' terms. Returns the
/// console's tables that are absent (adoption adds them); `each` hears
/// every table that is there, with its columns.
pub(crate) fn check_required(
    shown: &Path,
    words: &LedgerWords,
    mut columns: impl FnMut(&str) -> Result<Vec<String>>,
    mut each: impl FnMut(&str, &[String]),
) -> Result<Vec<&'static str>> {
    let mut missing_console_tables = Vec::new();
    for (table, required) in REQUIRED_COLUMNS {
        let present = columns(table)?;
        if present.is_empty() {
            if CONSOLE_TABLE_NAMES.contains(table) {
                missing_console_tables.push(*table);
                continue;
            }
            return Err(Error::ledger(
                shown,
                format!(
                    "not a ledger-v1 {}: table `{table}` is missing",
                    words.holder
                ),
                if *table == "operations" {
                    format!(
                        "check the {}; `settle init LEDGER` creates a new, empty ledger",
                        words.locator
                    )
                } else {
                    format!(
                        "create the table as ledger-v1 describes ({}), then open it again",
                        words.contract
                    )
                },
            ));
        }
        if let Some(col) = required.iter().find(|c| !present.iter().any(|p| p == *c)) {
            return Err(Error::ledger(
                shown,
                format!("table `{table}` has no column `{col}` that ledger-v1 requires"),
                format!(
                    "add the column as ledger-v1 describes ({}), then open it again",
                    words.contract
                ),
            ));
        }
        each(table, &present);
    }
    Ok(missing_console_tables)
}
