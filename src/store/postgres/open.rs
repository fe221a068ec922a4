//! Creating and opening a PostgreSQL ledger: connecting, then the schema's
//! creation or adoption ([`super::schema`]).

use std::time::Duration;

use super::address::Address;
use super::conn::Pg;
use super::schema;
use crate::error::Result;
use crate::store::open::{Access, BUSY_TIMEOUT, OpenReport, Progress};

impl Pg {
    /// Creates the ledger's tables in an empty database; refuses one that
    /// already holds `operations`.
    pub(crate) fn create(address: &Address) -> Result<Pg> {
        let mut pg = Pg::connect(address, false, BUSY_TIMEOUT)?;
        schema::create(&mut pg)?;
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
        let report = schema::open(&mut pg, progress)?;
        Ok((pg, report))
    }
}
