//! The read model's file: where it lies beside the ledger, its tables and
//! the indexes the console's pages walk. SQL text only; [`super::build`]
//! and [`super::catch_up`] run it on the keeper's connection, where the
//! read model is `main` and the ledger is attached read-only as `l`.

use std::path::{Path, PathBuf};

use crate::store::sqlite::reads::filter::{STALE_CANDIDATES, instant_sql, queue_candidates_sql};

/// The read model's format: a file of another format is rebuilt.
pub(crate) const FORMAT: i64 = 5;

/// The read model of `ledger`: the ledger's path with `-settle` after it,
/// beside SQLite's own `-wal` and `-shm`.
pub(crate) fn sidecar(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push("-settle");
    PathBuf::from(name)
}

/// The read model's tables. The copied columns of `settle_ops` have no
/// declared type, so each keeps the value and type the service wrote (an
/// integer lease stays an integer) and compares `IS` equal to the ledger's.
///
/// `err:` and free text find their candidates through a trigram index
/// (FTS5) over the distinct values they read: attempts' errors, accounts,
/// op types, keys and result ids. Errors repeat (a few texts over millions
/// of attempts), so each distinct text is indexed once and
/// `settle_error_ops` maps it to the operations whose attempts have it;
/// the four columns free text reads already have an index on
/// `settle_ops`. A value no operation has any more stays until the next
/// build: it only costs a lookup that finds nothing.
pub(crate) const TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS settle_marks (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    format     INTEGER NOT NULL,
    ledger_id  TEXT NOT NULL,
    ops        INTEGER NOT NULL,
    events     INTEGER NOT NULL,
    attempts   INTEGER NOT NULL,
    decisions  INTEGER NOT NULL,
    complete   INTEGER NOT NULL,
    boot       TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS settle_ops (
    id               INTEGER PRIMARY KEY,
    state, account, op_type, idem_key, result_id, lease_expires_at,
    created_at, updated_at, version,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error,
    last_attempt,
    last_attempt_at,
    last_event,
    last_event_id
);
CREATE TABLE IF NOT EXISTS settle_events (
    op_id    INTEGER NOT NULL,
    event_id INTEGER NOT NULL,
    PRIMARY KEY (op_id, event_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS settle_state_counts (
    state TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS settle_texts (
    id    INTEGER PRIMARY KEY,
    value NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE IF NOT EXISTS settle_texts_fts USING fts5(
    value, content = 'settle_texts', content_rowid = 'id', tokenize = 'trigram',
    columnsize = 0
);
CREATE TRIGGER IF NOT EXISTS settle_texts_indexed AFTER INSERT ON settle_texts BEGIN
    INSERT INTO settle_texts_fts (rowid, value) VALUES (new.id, new.value);
END;
CREATE TABLE IF NOT EXISTS settle_error_ops (
    text_id INTEGER NOT NULL,
    op_id   INTEGER NOT NULL,
    PRIMARY KEY (text_id, op_id)
) WITHOUT ROWID;
"#;

/// Every table [`TABLES`] creates, dropped before a rebuild.
pub(crate) const TABLE_NAMES: [&str; 7] = [
    "settle_marks",
    "settle_ops",
    "settle_events",
    "settle_state_counts",
    "settle_texts_fts",
    "settle_texts",
    "settle_error_ops",
];

/// The indexes a page walks, each ending in `id` so a page in id order
/// reads only the rows it returns (the plan tests hold this). The queue's
/// and the stale lease's come from the domain's rules, so the SQL that
/// pages the queue and the index it needs cannot drift apart. Built after
/// the bulk copy, on the read model's file: no build blocks the service.
/// So is the index of error mappings by operation, which only the
/// catch-up's refresh of one operation reads: sorted once, it costs less
/// than kept row by row through the copy.
pub(crate) fn indexes() -> Vec<(&'static str, String)> {
    vec![
        ("settle_error_ops_op", "settle_error_ops (op_id)".into()),
        ("settle_operations_state", "settle_ops (state, id)".into()),
        (
            "settle_operations_account",
            "settle_ops (account, id)".into(),
        ),
        ("settle_operations_type", "settle_ops (op_type, id)".into()),
        ("settle_operations_key", "settle_ops (idem_key, id)".into()),
        (
            "settle_operations_queue",
            format!("settle_ops (id) WHERE {}", queue_candidates_sql("state")),
        ),
        (
            "settle_operations_reserved_lease",
            format!(
                "settle_ops ({}) WHERE {STALE_CANDIDATES}",
                instant_sql("lease_expires_at")
            ),
        ),
    ]
}

/// The columns copied from `operations` as they are, in order.
pub(crate) const COPIED: &str = "state, account, op_type, idem_key, result_id, lease_expires_at, \
     created_at, updated_at, version";

/// The same columns of `operations o`.
pub(crate) const COPIED_O: &str = "o.state, o.account, o.op_type, o.idem_key, o.result_id, \
     o.lease_expires_at, o.created_at, o.updated_at, o.version";
