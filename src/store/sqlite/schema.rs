//! The ledger schema: ledger-v1's tables as services create them, the tables
//! and indexes the console adds, and the forward migrations between schema
//! versions (`PRAGMA user_version`). Validation that a file is a ledger the
//! console can read lives here too.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::chain;
use super::columns::SETTLE_COLUMNS;
use super::derived::{OLD_INDEXES, OLD_TABLES, OLD_TRIGGERS};
use super::error::{classify_open_error, sqlite};
use crate::error::{Error, Result};
use crate::store::open::Progress;
use crate::store::tables::{LedgerWords, check_required};

/// The schema version this binary writes and understands.
pub const SCHEMA_VERSION: i64 = 6;

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
    extra_attempt INTEGER NOT NULL DEFAULT 0,
    chain_hash    TEXT
);
CREATE TABLE IF NOT EXISTS retry_requests (
    id           INTEGER PRIMARY KEY,
    op_id        INTEGER NOT NULL,
    idem_key     TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    status       TEXT NOT NULL,
    decision_id  INTEGER NOT NULL,
    claimed_by       TEXT,
    claim_expires_at TEXT,
    runs             INTEGER NOT NULL DEFAULT 0,
    finished_at      TEXT,
    outcome          TEXT
);
CREATE TABLE IF NOT EXISTS op_types (
    op_type         TEXT PRIMARY KEY,
    idempotent      INTEGER NOT NULL,
    key_retention_s INTEGER,
    description     TEXT
);
"#;

/// settle's own tables beyond the contract's: the receivers' answers to
/// probes (schema 5), append-only like the decisions, and the ledger's
/// identity (schema 6), which its read model beside it must carry too.
const SETTLE_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS settle_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO settle_meta (key, value)
    VALUES ('ledger_id', lower(hex(randomblob(16))));
CREATE TABLE IF NOT EXISTS settle_probes (
    id          INTEGER PRIMARY KEY,
    op_id       INTEGER NOT NULL,
    idem_key    TEXT NOT NULL,
    command     TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    result_id   TEXT,
    exit        TEXT NOT NULL,
    output      TEXT,
    operator    TEXT NOT NULL,
    probed_at   TEXT NOT NULL,
    duration_ms INTEGER NOT NULL
);
"#;

/// Indexes on settle's own tables, which settle writes and the service
/// never does. Named `settle_*` so services can tell them from their own.
/// The service's tables carry none of settle's: the pages walk the read
/// model's ([`super::model`]).
const CONSOLE_INDEXES: &[(&str, &str)] = &[
    ("settle_decisions_op", "decisions (op_id, id)"),
    ("settle_retry_requests_op", "retry_requests (op_id, id)"),
    (
        "settle_retry_requests_status",
        "retry_requests (status, id)",
    ),
    ("settle_probes_op", "settle_probes (op_id, id)"),
];

/// Every statement that brings settle's own tables, their indexes and
/// their append-only triggers into a ledger, each with the step name
/// progress reports show. All are idempotent (`IF NOT EXISTS`) and cheap:
/// none reads the service's tables.
fn console_steps() -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = vec![(
        "creating settle's tables".to_string(),
        SETTLE_TABLES.to_string(),
    )];
    for (name, on) in CONSOLE_INDEXES {
        steps.push((
            format!("building index {name}"),
            format!("CREATE INDEX IF NOT EXISTS {name} ON {on};"),
        ));
    }
    steps.push((
        "making the audit trail append-only".to_string(),
        chain::append_only_triggers()
            .into_iter()
            .map(|(name, when, body)| {
                format!("CREATE TRIGGER IF NOT EXISTS {name} {when} BEGIN\n{body}\nEND;")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    ));
    steps
}

/// Names of every object [`console_steps`] creates, to tell whether a ledger
/// has them all.
fn console_object_names() -> Vec<String> {
    let mut names: Vec<String> = CONSOLE_INDEXES.iter().map(|(n, _)| n.to_string()).collect();
    names.extend(["settle_probes", "settle_meta"].map(String::from));
    names.extend(
        chain::append_only_triggers()
            .into_iter()
            .map(|(n, _, _)| n.to_string()),
    );
    names
}

/// What settle kept on the service's tables before schema 6: a ledger
/// holding any of it is migrated.
fn old_object_names() -> impl Iterator<Item = &'static str> {
    OLD_TRIGGERS
        .into_iter()
        .chain(OLD_INDEXES)
        .chain(OLD_TABLES)
}

impl Inspection {
    /// Which of settle's tables reads may use.
    pub(super) fn tables(&self) -> crate::store::tables::Tables {
        crate::store::tables::Tables {
            console: self.missing_console_tables.is_empty(),
            worker: self.worker_columns,
        }
    }
}

/// What the file holds, read without writing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    pub user_version: i64,
    /// Console tables absent from the file (adoption adds them).
    pub missing_console_tables: Vec<&'static str>,
    /// Console indexes or columns absent (adoption adds them).
    pub needs_upgrade: bool,
    /// `settle_probes` and the worker's `retry_requests` columns exist
    /// (schema 5): reads may select them.
    pub worker_columns: bool,
    /// The ledger carries the identity its read model must match (schema
    /// 6): reads may use a read model built for it.
    pub read_model: bool,
}

/// A file's ledger, in a refusal of its schema.
const WORDS: LedgerWords = LedgerWords {
    holder: "file",
    locator: "path",
    contract: "see the README",
};

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
    let missing_console_tables = check_required(
        path,
        &WORDS,
        |table| table_columns(conn, path, table),
        |_, _| {},
    )?;
    let present = settle_objects(conn, path)?;
    let all_objects = console_object_names().iter().all(|n| present.contains(n))
        && !old_object_names().any(|n| present.iter().any(|p| p == n));
    let mut has_settle_columns = true;
    for (table, wanted) in SETTLE_COLUMNS {
        let columns = table_columns(conn, path, table)?;
        has_settle_columns &= missing_console_tables.contains(&table)
            || wanted.iter().all(|(c, _)| columns.iter().any(|p| p == c));
    }
    let worker_columns = has_settle_columns && present.iter().any(|n| n == "settle_probes");
    let read_model = user_version >= 6 && present.iter().any(|n| n == "settle_meta");
    Ok(Inspection {
        user_version,
        worker_columns,
        needs_upgrade: user_version < SCHEMA_VERSION
            || !missing_console_tables.is_empty()
            || !all_objects
            || !has_settle_columns,
        read_model,
        missing_console_tables,
    })
}

fn settle_objects(conn: &Connection, path: &Path) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'settle\\_%' ESCAPE '\\'")
        .map_err(|e| sqlite(path, "reading the schema", e))?;
    stmt.query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| sqlite(path, "reading the schema", e))
}

/// The ledger's identity (schema 6), which its read model must carry.
pub(super) fn ledger_id(conn: &Connection, path: &Path) -> Result<Option<String>> {
    conn.query_row(
        "SELECT value FROM main.settle_meta WHERE key = 'ledger_id'",
        [],
        |r| r.get(0),
    )
    .optional()
    .map_err(|e| sqlite(path, "reading the ledger's identity", e))
}

/// Creates the whole schema in a new, empty file.
pub fn create(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| sqlite(path, "starting the schema transaction", e))?;
    tx.execute_batch(SERVICE_TABLES)
        .and_then(|_| tx.execute_batch(CONSOLE_TABLES))
        .and_then(|_| {
            console_steps()
                .iter()
                .try_for_each(|(_, sql)| tx.execute_batch(sql))
        })
        .and_then(|_| tx.pragma_update(None, "user_version", SCHEMA_VERSION))
        .and_then(|_| tx.commit())
        .map_err(|e| sqlite(path, "creating the ledger schema", e))
}

/// Brings an older or service-created ledger up to [`SCHEMA_VERSION`] in one
/// short transaction: adds settle's own tables, columns, indexes and
/// append-only triggers, and drops the triggers an older settle kept on the
/// service's tables; never touches a service row nor reads the service's
/// tables, so the write lock is held for milliseconds whatever the
/// ledger's size. The indexes and summary tables an older settle kept are
/// dropped after, each in its own transaction. Calls `progress` before each
/// step. Returns one line saying what it did.
pub fn upgrade(
    conn: &mut Connection,
    path: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<String> {
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
    let present = settle_objects(&tx, path)?;
    let missing_objects: Vec<String> = console_object_names()
        .into_iter()
        .filter(|n| !present.contains(n))
        .collect();
    tx.execute_batch(CONSOLE_TABLES)
        .map_err(|e| sqlite(path, "adding the console tables", e))?;
    added.extend(add_missing_columns(&tx, path)?);
    let steps = console_steps();
    // Chain what an older settle recorded, before the triggers forbid the
    // update. Never on a ledger already at schema 3: recomputing its chain
    // would launder an edit into a valid link.
    let chaining = found.user_version < 3;
    let total = steps.len() + usize::from(chaining);
    if chaining {
        progress(Progress {
            step: "chaining the existing decisions".to_string(),
            done: 0,
            total,
        });
        let n = chain::fill(&tx, path)?;
        if n > 0 {
            added.push(format!(
                "a hash chain over the {n} decisions already recorded"
            ));
        }
    }
    drop_outdated_triggers(&tx, path, found.user_version)?;
    for (i, (step, sql)) in steps.into_iter().enumerate() {
        progress(Progress {
            step: step.clone(),
            done: i + usize::from(chaining),
            total,
        });
        tx.execute_batch(&sql).map_err(|e| sqlite(path, &step, e))?;
    }
    progress(Progress {
        step: "committing".to_string(),
        done: total,
        total,
    });
    added.extend(objects_added(found.user_version, &missing_objects));
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| sqlite(path, "setting the schema version", e))?;
    tx.commit()
        .map_err(|e| sqlite(path, "committing the upgrade", e))?;
    shed_old_objects(conn, path)?;
    Ok(upgrade_line(path, found.user_version, &added))
}

/// Adds the columns settle needs to the service's tables where they lack;
/// what it added, for the upgrade's line.
fn add_missing_columns(tx: &Connection, path: &Path) -> Result<Vec<String>> {
    let mut added = Vec::new();
    for (table, wanted) in SETTLE_COLUMNS {
        let columns = table_columns(tx, path, table)?;
        for (column, definition) in wanted {
            if !columns.iter().any(|c| c == column) {
                let doing = format!("adding {table}.{column}");
                tx.execute_batch(&format!(
                    "ALTER TABLE {table} ADD COLUMN {column} {definition}"
                ))
                .map_err(|e| sqlite(path, &doing, e))?;
                added.push(format!("column {table}.{column}"));
            }
        }
    }
    Ok(added)
}

/// The upgrade's one line on stderr: adopted, upgraded or repaired, and
/// what it added.
fn upgrade_line(path: &Path, user_version: i64, added: &[String]) -> String {
    let (verb, versions) = match user_version {
        0 => ("adopted", format!(" (schema 0 -> {SCHEMA_VERSION})")),
        SCHEMA_VERSION => ("repaired", String::new()),
        v => ("upgraded", format!(" (schema {v} -> {SCHEMA_VERSION})")),
    };
    format!(
        "settle: {verb} {}{versions}: added {}; no service rows changed",
        path.display(),
        added.join(", ")
    )
}

/// Drops, inside the upgrade's transaction, the triggers whose text
/// changed (schema 5 lets a worker's request end as `failed`) and every
/// trigger an older settle kept on the service's tables: from this commit
/// on, a service's write pays nothing for settle.
fn drop_outdated_triggers(tx: &Connection, path: &Path, user_version: i64) -> Result<()> {
    let forward = (user_version < 5).then_some("settle_retry_requests_forward");
    for name in OLD_TRIGGERS.into_iter().chain(forward) {
        let doing = format!("dropping trigger {name}");
        tx.execute_batch(&format!("DROP TRIGGER IF EXISTS main.{name};"))
            .map_err(|e| sqlite(path, &doing, e))?;
    }
    Ok(())
}

/// Drops the indexes and summary tables an older settle kept on the
/// service's tables, each in its own short transaction so a service's
/// write waits for one drop at most. A drop cut short is done on the next
/// writable open ([`inspect`] sees what is left).
fn shed_old_objects(conn: &mut Connection, path: &Path) -> Result<()> {
    let present = settle_objects(conn, path)?;
    for name in OLD_INDEXES {
        if present.iter().any(|p| p == name) {
            drop_one(conn, path, "INDEX", name)?;
        }
    }
    for name in OLD_TABLES {
        if present.iter().any(|p| p == name) {
            drop_one(conn, path, "TABLE", name)?;
        }
    }
    Ok(())
}

fn drop_one(conn: &mut Connection, path: &Path, kind: &str, name: &str) -> Result<()> {
    let doing = format!("dropping {} {name}", kind.to_lowercase());
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; DROP {kind} IF EXISTS main.{name}; COMMIT;"
    ))
    .map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        sqlite(path, &doing, e)
    })
}

/// What an upgrade from `user_version` adds besides tables and columns, for
/// its one line on stderr.
fn objects_added(user_version: i64, missing_objects: &[String]) -> Vec<String> {
    let mut added = Vec::new();
    if user_version < 3 {
        added.push("append-only triggers on the audit trail".to_string());
    }
    if user_version < 5 {
        added.push("the probes table and the worker's progress on retry requests".to_string());
    }
    if user_version < 6 {
        added.push(
            "a read model beside the ledger (LEDGER-settle) in place of triggers and \
             indexes on the service's tables"
                .to_string(),
        );
    }
    if user_version >= 3 && !missing_objects.is_empty() {
        // Someone dropped settle's objects (the append-only triggers, say):
        // name each, so an auditor sees it.
        added.push(format!("the missing {}", missing_objects.join(", ")));
    }
    added
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
