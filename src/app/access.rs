//! Whether this console may write to the ledger, with what that state
//! carries: a ledger being adopted is read-only until the writer is done,
//! and one whose database takes no write for now (no primary reachable)
//! turns writable again when it does, so neither can be confused with a
//! console the operator asked to be read-only.

use crate::store::Progress;

#[derive(Debug, Clone, PartialEq)]
pub enum LedgerAccess {
    ReadWrite,
    /// Opened with --read-only, a file that is not writable, no operator,
    /// or an adoption that failed.
    ReadOnly,
    /// The writer is adopting (or migrating) the ledger: the step running.
    Adopting(Progress),
    /// Opened writable, but no write would go through now: why (a
    /// failover under way). Writable again once the writer says so.
    Unavailable(String),
}

impl LedgerAccess {
    /// The adoption's step running, while the writer adopts the ledger.
    pub fn adopting(&self) -> Option<&Progress> {
        match self {
            LedgerAccess::Adopting(progress) => Some(progress),
            _ => None,
        }
    }

    /// Why no write goes through for now, while it does not.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            LedgerAccess::Unavailable(why) => Some(why),
            _ => None,
        }
    }
}
