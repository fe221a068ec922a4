//! The SQLite ledger's connection, [`Sqlite`]: what every file of the
//! backend works on.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;

use super::error::sqlite;
use crate::error::{Error, Result};
use crate::store::interrupt::Interrupt;
use crate::store::tables::Tables;

/// An open SQLite ledger.
pub struct Sqlite {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) read_only: bool,
    /// Which of settle's tables the file holds: a read-only look at a
    /// service ledger that was never adopted has none, so reads of
    /// decisions, retry requests and probes return nothing.
    pub(super) tables: Tables,
    /// The trigger-kept summary and count tables are there and current, so
    /// reads use them instead of aggregating (false for a read-only look at
    /// a ledger that was never adopted or migrated).
    pub(super) derived: bool,
    /// The busy timeout: how long a write waits for the write lock.
    pub(super) wait: Duration,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Sqlite {
    pub(super) fn err(&self, doing: &str, e: rusqlite::Error) -> Error {
        sqlite(&self.path, doing, e)
    }

    pub(super) fn ensure_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ledger(
                &self.path,
                "opened read-only",
                "open it without --read-only, from an account that may write the file",
            ));
        }
        Ok(())
    }
}

impl Interrupt for rusqlite::InterruptHandle {
    fn interrupt(&self) {
        rusqlite::InterruptHandle::interrupt(self);
    }
}
