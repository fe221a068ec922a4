//! Where a PostgreSQL ledger's writes go, apart from its reads
//! ([`super::routing`] moves them between these).

use postgres::Client;

/// Where the ledger's writes go.
pub(super) enum Writes {
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
