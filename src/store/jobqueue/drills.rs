//! Drills' verdicts on a job queue: written to settle's own schema
//! (`settle.settle_drills`) by the statements a PostgreSQL ledger writes
//! them with, the session's search path putting `settle` first, as probes
//! are ([`super::probes`]). The engine's tables are never touched: a
//! drill changes no job. Writing one adopts the database as a
//! first decision does; a read-only session refuses, nothing written.

use super::session::JobQueue;
use crate::domain::{DrillVerdict, OpTypeContract};
use crate::error::Result;
use crate::store::backend::Drills;
use crate::store::postgres::insert_drill;

/// A drill's verdict is read from settle's schema when one is there.
impl Drills for JobQueue {
    fn record_drill(&mut self, verdict: &DrillVerdict) -> Result<i64> {
        self.ensure_settle_schema()?;
        self.with_client("recording a drill verdict", |c| insert_drill(c, verdict))
    }

    fn latest_drill(&self, op_type: &str) -> Result<Option<DrillVerdict>> {
        if !self.tables().console {
            return Ok(None);
        }
        self.with_client("reading drill verdicts", |mut c| {
            crate::store::drills::latest(&mut c, op_type)
        })
    }

    fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>> {
        if !self.tables().console {
            return Ok(None);
        }
        self.with_client("reading op_types", |mut c| {
            crate::store::drills::contract(&mut c, op_type)
        })
    }
}
