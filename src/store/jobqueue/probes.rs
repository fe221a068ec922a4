//! Probes on a job queue: each answer written to settle's own schema
//! (`settle.settle_probes`) by the statement a PostgreSQL ledger writes it
//! with, the session's search path putting `settle` first. The engine's
//! tables are never touched: a probe changes no job. Writing one adopts
//! the database as a first decision does; a read-only session refuses,
//! nothing written.

use super::session::JobQueue;
use crate::domain::NewProbe;
use crate::error::Result;
use crate::store::backend::Probes;
use crate::store::postgres::insert_probe;

impl Probes for JobQueue {
    fn record_probe(&mut self, probe: &NewProbe) -> Result<i64> {
        self.ensure_settle_schema()?;
        self.with_client("recording a probe", |c| insert_probe(c, probe))
    }
}
