//! The ledger schema: ledger-v1's tables as services create them, the tables
//! and indexes the console adds, and the forward migrations between schema
//! versions (`PRAGMA user_version`). Validation that a file is a ledger the
//! console can read lives here too.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use crate::error::{Error, Result};

/// The schema version this binary writes and understands.
pub const SCHEMA_VERSION: i64 = 1;

/// Tables services write (ledger-v1). Required in every ledger.
pub const SERVICE_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS operations (
    id               INTEGER PRIMARY KEY,
    account          TEXT NOT NULL,
    op_type          TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    params           TEXT,
    state            TEXT NOT NULL,
    result_id        TEXT,
    max_attempts     INTEGER NOT NULL,
    deadline_at      TEXT,
    lease_expires_at TEXT,
    key_expires_at   TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    version          INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account, op_type, idem_key)
);
CREATE TABLE IF NOT EXISTS attempts (
    op_id      INTEGER NOT NULL REFERENCES operations(id),
    attempt    INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    ended_at   TEXT,
    outcome    TEXT NOT NULL,
    error      TEXT,
    response   TEXT,
    PRIMARY KEY (op_id, attempt)
);
CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY,
    op_id   INTEGER NOT NULL,
    attempt INTEGER,
    at      TEXT NOT NULL,
    event   TEXT NOT NULL,
    detail  TEXT
);
"#;

/// Tables the console writes (ledger-v1 decisions, retry_requests, op_types).
/// A ledger created by a service may lack them; adoption adds them.
const CONSOLE_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS decisions (
    id            INTEGER PRIMARY KEY,
    op_id         INTEGER NOT NULL,
    decision      TEXT NOT NULL,
    from_state    TEXT NOT NULL,
    to_state      TEXT NOT NULL,
    result_id     TEXT,
    evidence      TEXT,
    note          TEXT,
    operator      TEXT NOT NULL,
    decided_at    TEXT NOT NULL,
    op_version    INTEGER NOT NULL,
    undoes        INTEGER,
    extra_attempt INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS retry_requests (
    id           INTEGER PRIMARY KEY,
    op_id        INTEGER NOT NULL,
    idem_key     TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    status       TEXT NOT NULL,
    decision_id  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS op_types (
    op_type         TEXT PRIMARY KEY,
    idempotent      INTEGER NOT NULL,
    key_retention_s INTEGER,
    description     TEXT
);
"#;

/// Indexes the console relies on to page and count without full scans.
/// Named `settle_*` so services can tell them from their own.
const CONSOLE_INDEXES: &str = r#"
CREATE INDEX IF NOT EXISTS settle_operations_state ON operations (state, id);
CREATE INDEX IF NOT EXISTS settle_events_op ON events (op_id, id);
CREATE INDEX IF NOT EXISTS settle_decisions_op ON decisions (op_id, id);
CREATE INDEX IF NOT EXISTS settle_retry_requests_op ON retry_requests (op_id, id);
CREATE INDEX IF NOT EXISTS settle_retry_requests_status ON retry_requests (status, id);
"#;

/// Columns every ledger-v1 table must have, for validation. `extra_attempt`
/// is the console's own addition and is added by adoption when missing.
const REQUIRED_COLUMNS: &[(&str, &[&str])] = &[
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

const CONSOLE_TABLE_NAMES: [&str; 3] = ["decisions", "retry_requests", "op_types"];

/// What the file holds, read without writing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    pub user_version: i64,
    /// Console tables absent from the file (adoption adds them).
    pub missing_console_tables: Vec<&'static str>,
    /// Console indexes or columns absent (adoption adds them).
    pub needs_upgrade: bool,
}

/// Reads the schema and refuses what this binary cannot use: not SQLite, a
/// newer `user_version`, a missing service table or column. Writes nothing.
pub fn inspect(conn: &Connection, path: &Path) -> Result<Inspection> {
    let user_version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| classify_open_error(path, e))?;
    if user_version > SCHEMA_VERSION {
        return Err(Error::ledger(
            path,
            format!(
                "schema version {user_version} is newer than this settle knows ({SCHEMA_VERSION})"
            ),
            "use a newer settle; this one will not read or write it",
        ));
    }
    let mut missing_console_tables = Vec::new();
    for (table, columns) in REQUIRED_COLUMNS {
        let present = table_columns(conn, path, table)?;
        if present.is_empty() {
            if CONSOLE_TABLE_NAMES.contains(table) {
                missing_console_tables.push(*table);
                continue;
            }
            return Err(Error::ledger(
                path,
                format!("not a ledger-v1 file: table `{table}` is missing"),
                if *table == "operations" {
                    "check the path; `settle init LEDGER` creates a new, empty ledger"
                } else {
                    "create the table as ledger-v1 describes (see the README), then open it again"
                },
            ));
        }
        if let Some(col) = columns.iter().find(|c| !present.iter().any(|p| p == *c)) {
            return Err(Error::ledger(
                path,
                format!("table `{table}` has no column `{col}` that ledger-v1 requires"),
                "add the column as ledger-v1 describes (see the README), then open it again",
            ));
        }
    }
    let index_count: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'settle\\_%' ESCAPE '\\'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| sqlite(path, "reading the schema", e))?;
    let has_extra_attempt = missing_console_tables.contains(&"decisions")
        || table_columns(conn, path, "decisions")?
            .iter()
            .any(|c| c == "extra_attempt");
    Ok(Inspection {
        user_version,
        needs_upgrade: user_version < SCHEMA_VERSION
            || !missing_console_tables.is_empty()
            || index_count < 5
            || !has_extra_attempt,
        missing_console_tables,
    })
}

/// Creates the whole schema in a new, empty file.
pub fn create(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| sqlite(path, "starting the schema transaction", e))?;
    tx.execute_batch(SERVICE_TABLES)
        .and_then(|_| tx.execute_batch(CONSOLE_TABLES))
        .and_then(|_| tx.execute_batch(CONSOLE_INDEXES))
        .and_then(|_| tx.pragma_update(None, "user_version", SCHEMA_VERSION))
        .and_then(|_| tx.commit())
        .map_err(|e| sqlite(path, "creating the ledger schema", e))
}

/// Brings an older or service-created ledger up to [`SCHEMA_VERSION`] in one
/// transaction: adds the console's tables, columns and indexes, never touches
/// a service row. Returns one line saying what it did.
pub fn upgrade(conn: &mut Connection, path: &Path) -> Result<String> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| sqlite(path, "starting the upgrade transaction", e))?;
    // Inspect again inside the write lock: another console may have adopted
    // the file between our first look and now.
    let found = inspect(&tx, path)?;
    let mut added: Vec<String> = found
        .missing_console_tables
        .iter()
        .map(|t| format!("table {t}"))
        .collect();
    tx.execute_batch(CONSOLE_TABLES)
        .map_err(|e| sqlite(path, "adding the console tables", e))?;
    let decision_columns = table_columns(&tx, path, "decisions")?;
    if !decision_columns.iter().any(|c| c == "extra_attempt") {
        tx.execute_batch(
            "ALTER TABLE decisions ADD COLUMN extra_attempt INTEGER NOT NULL DEFAULT 0",
        )
        .map_err(|e| sqlite(path, "adding decisions.extra_attempt", e))?;
        added.push("column decisions.extra_attempt".to_string());
    }
    tx.execute_batch(CONSOLE_INDEXES)
        .map_err(|e| sqlite(path, "adding the console indexes", e))?;
    added.push("indexes".to_string());
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| sqlite(path, "setting the schema version", e))?;
    tx.commit()
        .map_err(|e| sqlite(path, "committing the upgrade", e))?;
    let verb = if found.user_version == 0 {
        "adopted"
    } else {
        "upgraded"
    };
    Ok(format!(
        "settle: {verb} {} (schema {} -> {SCHEMA_VERSION}): added {}; no service rows changed",
        path.display(),
        found.user_version,
        added.join(", ")
    ))
}

fn table_columns(conn: &Connection, path: &Path, table: &str) -> Result<Vec<String>> {
    let exists: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| classify_open_error(path, e))?;
    if exists.is_none() {
        return Ok(Vec::new());
    }
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .map_err(|e| sqlite(path, "reading the schema", e))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| sqlite(path, "reading the schema", e))?;
    Ok(names)
}

/// Turns SQLite's "file is not a database" into an error an operator can act on.
pub(crate) fn classify_open_error(path: &Path, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => Error::ledger(
            path,
            "not an SQLite database",
            "check the path: a ledger is an SQLite file (`settle init LEDGER` creates one)",
        ),
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => Error::ledger(
            path,
            "the SQLite file is corrupt",
            "restore it from a backup; settle will not write to it",
        ),
        _ => sqlite(path, "opening the ledger", e),
    }
}

pub(crate) fn sqlite(path: &Path, doing: &str, source: rusqlite::Error) -> Error {
    Error::Sqlite {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        source,
    }
}
