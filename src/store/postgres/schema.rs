//! The ledger's tables in PostgreSQL: creating an empty ledger, checking the
//! schema version (a newer one is refused), adopting a service's tables on
//! the first writable open (never on a read), the triggers that keep
//! decisions append-only and tell listeners of changes.

use super::Pg;
use crate::error::Result;
use crate::store::{OpenReport, Progress};

/// Creates settle's schema in an empty database.
pub(super) fn create(pg: &mut Pg) -> Result<()> {
    Err(pg.not_yet("creating a ledger"))
}

/// Checks the schema on open and adopts or migrates it when writable.
pub(super) fn open(pg: &mut Pg, _progress: &mut dyn FnMut(Progress)) -> Result<OpenReport> {
    Err(pg.not_yet("opening a ledger"))
}

impl Pg {
    /// Changes whenever another connection commits to the ledger.
    pub fn data_version(&self) -> Result<i64> {
        Err(self.not_yet("watching for changes"))
    }

    /// Reads again which of settle's tables the database holds.
    pub fn reinspect(&mut self) -> Result<()> {
        Err(self.not_yet("reinspecting the schema"))
    }

    /// Said by each part of the backend not built yet; goes away with the
    /// last of them.
    pub(super) fn not_yet(&self, doing: &str) -> crate::error::Error {
        crate::error::Error::ledger(
            &self.shown,
            format!("{doing} is not available on PostgreSQL yet"),
            "use a SQLite ledger for this (`settle copy` moves one across)",
        )
    }
}
