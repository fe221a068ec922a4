//! What an import did, whichever database it wrote to.

/// How many operations [`crate::store::Ledger::import`] added, and how many
/// it left alone because the ledger already held them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub inserted: usize,
    /// Operations already in the ledger under the same natural key; left
    /// untouched.
    pub already_present: usize,
}
