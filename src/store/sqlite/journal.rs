//! A bulk write into a file settle alone writes (a new ledger a copy
//! loads, the read model a build fills) goes through a rollback journal
//! rather than the WAL, and the file comes back to WAL after it.
//!
//! Through the WAL each page is written twice, once to the log and once
//! by the checkpoint, and a long transaction looks its spilled pages up in
//! the log again, each lookup slower as the log grows (a copy of 10M
//! operations: a 6 GB log). A rollback journal holds only the pages that
//! were there before the transaction (a new file's few); the rest go to
//! the file once, and a transaction that fails still leaves the file as it
//! was.

use rusqlite::{Connection, ErrorCode};

/// Puts the connection's `main` file in rollback journaling: false when
/// SQLite kept it in WAL because another connection has the file open,
/// and the write then goes through the WAL as before.
pub(super) fn leave_wal(conn: &Connection) -> rusqlite::Result<bool> {
    match conn.query_row("PRAGMA main.journal_mode = DELETE", [], |r| {
        r.get::<_, String>(0)
    }) {
        Ok(now) => Ok(now.eq_ignore_ascii_case("delete")),
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Puts the connection's `main` file back in WAL: false when SQLite could
/// not (another connection kept the file busy past the busy timeout).
pub(super) fn back_to_wal(conn: &Connection) -> rusqlite::Result<bool> {
    let now: String = conn.query_row("PRAGMA main.journal_mode = WAL", [], |r| r.get(0))?;
    Ok(now.eq_ignore_ascii_case("wal"))
}
