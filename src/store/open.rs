//! What opening a ledger takes and tells, whichever database holds it: the
//! access asked for, the progress of an adoption or migration, and the
//! report of what opening did.

use std::time::Duration;

/// How long a write waits for another writer (a service, a worker, a second
/// console) before giving up with [`crate::error::Error::Busy`];
/// `settle decide --wait` changes it.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the console may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    /// Opens read-only: no write at all, adoption and migrations included.
    ReadOnly,
}

/// What opening did or could not do, for one line on stderr or the header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The adoption or migration that happened, in one line.
    pub upgraded: Option<String>,
    /// Why the ledger is read-only when the operator did not ask for it.
    pub read_only_reason: Option<String>,
    /// Why a read-only ledger is shown without adopting it.
    pub not_adopted: Option<String>,
    /// Why reads go to the ledger's own tables without settle's read
    /// model, for now (it could not be opened: a full disk).
    pub model_aside: Option<String>,
}

/// One step of a migration, for a progress line: `done` of `total` steps
/// finished, `step` running now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub step: String,
    pub done: usize,
    pub total: usize,
}
