//! Where a PostgreSQL ledger's writes go, apart from its reads
//! ([`super::routing`] moves them between these).

use std::sync::atomic::{AtomicU64, Ordering};

use postgres::Client;

/// Where the ledger's writes go.
pub(crate) enum Writes {
    /// On the reading connection: one host, or the reads are on the
    /// primary anyway.
    Reader,
    /// On a connection of their own to the primary (None until the first
    /// write, or after it broke).
    Own(Option<Client>),
    /// The standby had not replayed this process's write in time: reads
    /// and writes share the primary's connection (swapped into
    /// `Pg::client`) while the standby's waits here for `lsn`.
    Lagging { standby: Client, lsn: String },
}

/// Decisions committed by any ledger of this process, so the ledger that
/// reads (another connection, often another thread) knows to wait for the
/// standby to replay them.
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Says that a decision was committed, for `Pg::catch_up`.
pub(crate) fn committed() {
    WRITTEN.fetch_add(1, Ordering::SeqCst);
}

/// Where [`WRITTEN`] stands: a new ledger waits for nothing older.
pub(crate) fn written() -> u64 {
    WRITTEN.load(Ordering::SeqCst)
}
