//! Recording probes in a PostgreSQL ledger (`settle_probes`, append-only).

use super::Pg;
use crate::domain::NewProbe;
use crate::error::Result;

impl Pg {
    /// Appends one probe; returns its id.
    pub fn record_probe(&mut self, _probe: &NewProbe) -> Result<i64> {
        self.ensure_writable()?;
        Err(self.not_yet("recording a probe"))
    }
}
