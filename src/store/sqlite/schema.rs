//! The ledger schema: ledger-v1's tables as services create them, the tables
//! and indexes the console adds, and the forward migrations between schema
//! versions (`PRAGMA user_version`). Validation that a file is a ledger the
//! console can read lives here too.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::chain;
use super::columns::SETTLE_COLUMNS;
use super::derived::{COUNT_TRIGGERS_BEFORE_4, DERIVED_TABLES, FILL_DERIVED, triggers};
use super::error::{classify_open_error, sqlite};
use crate::error::{Error, Result};
use crate::store::open::Progress;
use crate::store::tables::{CONSOLE_TABLE_NAMES, REQUIRED_COLUMNS};

/// The schema version this binary writes and understands.
pub const SCHEMA_VERSION: i64 = 5;

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

/// settle's own tables beyond the contract's (schema 5): the receivers'
/// answers to probes, append-only like the decisions.
const SETTLE_TABLES: &str = r#"
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

/// Indexes the console relies on to page and count without full scans.
/// Named `settle_*` so services can tell them from their own. Each filter
/// qualifier has one whose last column is `id`, so a page in id order reads
/// only the rows it returns (`tests` in `store/plans.rs` hold this).
const CONSOLE_INDEXES: &[(&str, &str)] = &[
    ("settle_operations_state", "operations (state, id)"),
    ("settle_events_op", "events (op_id, id)"),
    ("settle_decisions_op", "decisions (op_id, id)"),
    ("settle_retry_requests_op", "retry_requests (op_id, id)"),
    (
        "settle_retry_requests_status",
        "retry_requests (status, id)",
    ),
    ("settle_operations_account", "operations (account, id)"),
    ("settle_operations_type", "operations (op_type, id)"),
    ("settle_operations_key", "operations (idem_key, id)"),
    ("settle_probes_op", "settle_probes (op_id, id)"),
];

/// Indexes whose definition comes from the domain's rules (the queue), so
/// the SQL that pages the queue and the index it needs cannot drift apart.
fn domain_indexes() -> Vec<(&'static str, String)> {
    vec![
        (
            "settle_operations_queue",
            format!(
                "operations (id) WHERE {}",
                super::read::queue_candidates_sql("state")
            ),
        ),
        (
            "settle_operations_reserved_lease",
            format!(
                "operations ({}) WHERE {}",
                super::read::instant_sql("lease_expires_at"),
                super::read::STALE_CANDIDATES
            ),
        ),
    ]
}

/// Every statement that brings the console's indexes, derived tables and
/// triggers into a ledger, each with the step name progress reports show.
/// All are idempotent (`IF NOT EXISTS`) except the fills, which start over.
fn console_steps() -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = vec![(
        "creating settle's tables".to_string(),
        format!("{DERIVED_TABLES}{SETTLE_TABLES}"),
    )];
    let indexes = CONSOLE_INDEXES
        .iter()
        .map(|(n, on)| (n.to_string(), on.to_string()))
        .chain(
            domain_indexes()
                .into_iter()
                .map(|(n, on)| (n.to_string(), on)),
        );
    for (name, on) in indexes {
        steps.push((
            format!("building index {name}"),
            format!("CREATE INDEX IF NOT EXISTS {name} ON {on};"),
        ));
    }
    steps.push((
        "creating the triggers".to_string(),
        triggers()
            .into_iter()
            .map(|(name, when, body)| {
                format!("CREATE TRIGGER IF NOT EXISTS {name} {when} BEGIN\n{body}\nEND;")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    ));
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
    names.extend(domain_indexes().into_iter().map(|(n, _)| n.to_string()));
    names.extend(derived_object_names());
    names.push("settle_probes".to_string());
    names.extend(
        chain::append_only_triggers()
            .into_iter()
            .map(|(n, _, _)| n.to_string()),
    );
    names
}

/// Names of the derived tables and the triggers that keep them current.
fn derived_object_names() -> Vec<String> {
    let mut names: Vec<String> = triggers()
        .into_iter()
        .map(|(n, _, _)| n.to_string())
        .collect();
    names.extend(["settle_op_summary", "settle_state_counts"].map(String::from));
    names
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
    /// The derived tables (operation summaries, state counts) exist and
    /// their triggers keep them current: reads may use them.
    pub derived: bool,
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
    let present = settle_objects(conn, path)?;
    let all_objects = console_object_names().iter().all(|n| present.contains(n));
    let mut has_settle_columns = true;
    for (table, wanted) in SETTLE_COLUMNS {
        let columns = table_columns(conn, path, table)?;
        has_settle_columns &= missing_console_tables.contains(&table)
            || wanted.iter().all(|(c, _)| columns.iter().any(|p| p == c));
    }
    let worker_columns = has_settle_columns && present.iter().any(|n| n == "settle_probes");
    // The derived tables arrived in schema 2; a read-only look at a schema 2
    // ledger may use them.
    let derived = user_version >= 2 && derived_object_names().iter().all(|n| present.contains(n));
    Ok(Inspection {
        user_version,
        worker_columns,
        needs_upgrade: user_version < SCHEMA_VERSION
            || !missing_console_tables.is_empty()
            || !all_objects
            || !has_settle_columns,
        derived,
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
/// transaction: adds the console's tables, columns, indexes, derived tables
/// and their triggers, never touches a service row. Calls `progress` before
/// each step (index builds dominate on a big ledger). Returns one line saying
/// what it did.
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
    let steps: Vec<(String, String)> = console_steps()
        .into_iter()
        .chain(
            FILL_DERIVED
                .iter()
                .map(|(n, q)| (n.to_string(), q.to_string())),
        )
        .collect();
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
    truncate_wal(conn);
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

/// The count triggers kept their names when their text changed (schema 4
/// counts a NULL state): `CREATE TRIGGER IF NOT EXISTS` would keep the old
/// ones, so a ledger older than 4 loses them first.
fn drop_outdated_triggers(tx: &Connection, path: &Path, user_version: i64) -> Result<()> {
    // Schema 5 lets a worker's request end as `failed`.
    let forward = (user_version < 5).then_some("settle_retry_requests_forward");
    let counts = if user_version < 4 {
        &COUNT_TRIGGERS_BEFORE_4[..]
    } else {
        &[]
    };
    for name in counts.iter().copied().chain(forward) {
        let doing = format!("replacing trigger {name}");
        tx.execute_batch(&format!("DROP TRIGGER IF EXISTS {name};"))
            .map_err(|e| sqlite(path, &doing, e))?;
    }
    Ok(())
}

/// What an upgrade from `user_version` adds besides tables and columns, for
/// its one line on stderr.
fn objects_added(user_version: i64, missing_objects: &[String]) -> Vec<String> {
    let mut added = Vec::new();
    if user_version < 2 {
        added.push("indexes, operation summaries, state counts and their triggers".to_string());
    }
    if user_version < 3 {
        added.push("append-only triggers on the audit trail".to_string());
    }
    if (2..4).contains(&user_version) {
        added.push("state counts that count a NULL state".to_string());
    }
    if user_version < 5 {
        added.push("the probes table and the worker's progress on retry requests".to_string());
    }
    if user_version >= 3 && !missing_objects.is_empty() {
        // Someone dropped settle's objects (the append-only triggers, say):
        // name each, so an auditor sees it.
        added.push(format!("the missing {}", missing_objects.join(", ")));
    }
    added
}

/// Copies the WAL into the database file and empties it. An adoption writes
/// every index page through the WAL (177 MB for a million operations), which
/// every later open would otherwise read again. Best effort: the
/// data is committed either way, so a reader holding an old snapshot (the
/// checkpoint then stops short) is not an error.
fn truncate_wal(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
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
