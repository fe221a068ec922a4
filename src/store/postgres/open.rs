//! Creating and opening a PostgreSQL ledger: connecting, then the schema's
//! creation or adoption ([`super::schema`]).

use std::time::Duration;

use super::conn::Pg;
use super::connect::Address;
use super::connect::Reads;
use super::schema::{opening, tables};
use crate::error::Result;
use crate::store::open::{Access, BUSY_TIMEOUT, OpenReport, Progress};

impl Pg {
    /// Creates the ledger's tables in an empty database; refuses one that
    /// already holds `operations`.
    pub(crate) fn create(address: &Address) -> Result<Pg> {
        // Creating writes: the whole session on the primary.
        let mut pg = Pg::connect(&address.reading_from(Reads::Primary), false, BUSY_TIMEOUT)?;
        tables::create(&mut pg)?;
        pg.created_here = true;
        Ok(pg)
    }

    /// Opens an existing ledger; a writable open adopts a service's tables
    /// (never a read-only one), and a newer schema is refused.
    pub(crate) fn open_waiting(
        address: &Address,
        access: Access,
        wait: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Pg, OpenReport)> {
        let mut pg = Pg::connect(address, access == Access::ReadOnly, wait)?;
        let mut report = opening::open(&mut pg, progress)?;
        // A writable open on a standby finds the primary now, so the
        // console says at once that it cannot write.
        if access == Access::ReadWrite
            && pg.writer_closed()
            && pg.reconnect_writer(Duration::ZERO).is_ok()
            && pg.no_primary.get()
        {
            report.read_only_reason = Some("no primary reachable".into());
        }
        Ok((pg, report))
    }
}
