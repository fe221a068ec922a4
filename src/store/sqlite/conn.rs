//! The SQLite ledger's connection, [`Sqlite`]: what every file of the
//! backend works on.

use std::cell::RefCell;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::error::sqlite;
use super::model::{FileId, Model};
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::backend::Waiter;
use crate::store::interrupt::Interrupt;
use crate::store::tables::Tables;

/// An open SQLite ledger.
pub struct Sqlite {
    /// The read model beside the ledger, attached as `rm`: reads find their
    /// rows and counts through it instead of aggregating (None for a
    /// read-only look at a ledger that was never adopted or migrated, or
    /// whose read model is not built yet, or set aside: see `away`).
    /// Declared first so it is dropped first: the ledger's own connection
    /// must close last, as the one that checkpoints the WAL and removes it
    /// (the keeper attaches the ledger read-only and cannot).
    pub(super) model: RefCell<Option<Model>>,
    /// The read model set aside after it failed a read, while it is made
    /// ready again ([`super::read_model`]).
    pub(super) away: RefCell<Option<Away>>,
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) read_only: bool,
    /// Which of settle's tables the file holds: a read-only look at a
    /// service ledger that was never adopted has none, so reads of
    /// decisions, retry requests and probes return nothing.
    pub(super) tables: Tables,
    /// The busy timeout: how long a write waits for the write lock.
    pub(super) wait: Duration,
    /// The contracts the receivers file declares ([`Session::declare`]).
    ///
    /// [`Session::declare`]: crate::store::backend::Session::declare
    pub(super) declared: Declarations,
    /// Created by this process and not yet written: a copy into it may
    /// build its indexes after the rows.
    pub(super) created_here: bool,
}

/// A read model set aside, and how it comes back.
#[derive(Default)]
pub(crate) struct Away {
    /// The model's file when a read found it damaged: discarded before
    /// the rebuild if it is still that file and still damaged.
    pub(crate) damaged: Option<FileId>,
    /// The rebuild under way.
    pub(crate) rebuild: Option<JoinHandle<Result<Model>>>,
    /// No new try before this.
    pub(crate) not_before: Option<Instant>,
    /// How the reads went on: the waiter of the model set aside.
    pub(crate) waiter: Option<Waiter>,
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

    /// Whether reads go through the read model.
    pub(super) fn derived(&self) -> bool {
        self.model.borrow().is_some()
    }

    /// Brings the read model up to what the ledger holds before a read,
    /// when someone committed since the last one; one set aside comes
    /// back once it is ready.
    pub(super) fn fresh(&self) -> Result<()> {
        self.come_back();
        match &*self.model.borrow() {
            Some(model) => model.fresh(&self.conn),
            None => Ok(()),
        }
    }
}

impl Interrupt for rusqlite::InterruptHandle {
    fn interrupt(&self) {
        rusqlite::InterruptHandle::interrupt(self);
    }
}
