//! SQLite's errors said as settle's: each sorted by what it means (busy,
//! refused, interrupted) so callers never ask which database failed.

use std::path::Path;

use rusqlite::ErrorCode;

use crate::error::{Error, Fault};

/// Turns SQLite's "file is not a database" into an error an operator can act on.
pub(crate) fn classify_open_error(path: &Path, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Error::ledger(
            path,
            "not an SQLite database",
            "check the path: a ledger is an SQLite file (`settle init LEDGER` creates one)",
        ),
        Some(ErrorCode::DatabaseCorrupt) => Error::ledger(
            path,
            "the SQLite file is corrupt",
            "restore it from a backup; settle will not write to it",
        ),
        _ => sqlite(path, "opening the ledger", e),
    }
}

/// A SQLite error while `doing` something, said as settle's: an
/// interrupted statement as [`Error::Interrupted`], anything else as
/// [`Error::Database`] with what kind of failure it is.
pub(crate) fn sqlite(path: &Path, doing: &str, source: rusqlite::Error) -> Error {
    let code = source.sqlite_error_code();
    if code == Some(ErrorCode::OperationInterrupted) {
        return Error::Interrupted {
            doing: doing.to_string(),
        };
    }
    let mut problem = source.to_string();
    let mut fault = fault(code);
    if disk_full(path, code) {
        problem.push_str(
            "; the disk holding it is full: nothing was written, free space there and try again",
        );
        fault = Fault::Full;
    }
    Error::Database {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        problem,
        fault,
    }
}

/// Whether the failure is a full disk: SQLite's own SQLITE_FULL, or an I/O
/// error (a journal or WAL file that could not be made or grown) on a
/// file system with less than [`NEARLY_FULL`] left.
fn disk_full(path: &Path, code: Option<ErrorCode>) -> bool {
    match code {
        Some(ErrorCode::DiskFull) => true,
        Some(ErrorCode::SystemIoFailure) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            rustix::fs::statvfs(dir.unwrap_or(Path::new(".")))
                .is_ok_and(|fs| fs.f_bavail.saturating_mul(fs.f_frsize) < NEARLY_FULL)
        }
        _ => false,
    }
}

/// Less free space than this beside a file whose write failed: it failed
/// for want of it.
const NEARLY_FULL: u64 = 1024 * 1024;

fn fault(code: Option<ErrorCode>) -> Fault {
    match code {
        // SQLITE_BUSY only: the busy timeout ran out waiting for another
        // connection's write lock.
        Some(ErrorCode::DatabaseBusy) => Fault::Busy,
        Some(
            ErrorCode::ConstraintViolation
            | ErrorCode::PermissionDenied
            | ErrorCode::ReadOnly
            | ErrorCode::AuthorizationForStatementDenied,
        ) => Fault::Refused,
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Fault::Damaged,
        _ => Fault::Other,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rusqlite::Connection;

    use super::*;

    /// A real second connection meets a held write lock and an append-only
    /// guard: the first is busy (worth waiting out), the second refused.
    #[test]
    fn a_held_lock_is_busy_and_a_guard_is_a_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE t (x);
                 CREATE TRIGGER t_kept BEFORE DELETE ON t
                   BEGIN SELECT RAISE(ABORT, 't is append-only'); END;
                 INSERT INTO t VALUES (1);
                 BEGIN IMMEDIATE;",
            )
            .unwrap();
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(Duration::ZERO).unwrap();
        let busy = sqlite(
            &path,
            "writing",
            other.execute("INSERT INTO t VALUES (2)", []).unwrap_err(),
        );
        assert!(
            matches!(
                busy,
                Error::Database {
                    fault: Fault::Busy,
                    ..
                }
            ),
            "{busy:?}"
        );
        assert!(busy.is_transient());
        assert!(matches!(
            busy.busy_after(Duration::from_secs(1)),
            Error::Busy { .. }
        ));
        holder.execute_batch("COMMIT").unwrap();
        let guarded = sqlite(
            &path,
            "deleting",
            other.execute("DELETE FROM t", []).unwrap_err(),
        );
        assert!(
            matches!(
                guarded,
                Error::Database {
                    fault: Fault::Refused,
                    ..
                }
            ),
            "{guarded:?}"
        );
        assert!(!guarded.is_transient());
    }
}
