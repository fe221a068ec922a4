//! Which of settle's own tables a ledger holds, whichever database holds it.

/// Which of settle's own tables a ledger holds, read once when it opens
/// (and again by `reinspect`), so reads leave out what is not there
/// instead of asking the database on every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    /// `decisions`, `retry_requests` and `op_types` (a read-only look at a
    /// service's ledger that was never adopted has none).
    pub console: bool,
    /// `settle_probes` and the worker's `retry_requests` columns (SQLite
    /// schema 5; every adopted PostgreSQL ledger).
    pub worker: bool,
}

impl Tables {
    /// A writable ledger: opening it adopted or migrated whatever lacked.
    pub(crate) const ALL: Tables = Tables {
        console: true,
        worker: true,
    };
}
