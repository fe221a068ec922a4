//! What settle does not write on a job queue, refused before anything is
//! written: probes, imports and copies answer why, naming the engine
//! ([`JobQueue::refusal`]); settle's worker never runs a job (the engine's
//! own does).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::session::JobQueue;
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{DrillVerdict, NewOperation, NewProbe, OpTypeContract};
use crate::error::Result;
use crate::store::backend::{Drills, Import, Probes, Retries, Transfer};
use crate::store::copy::{CopyReport, RowSource, Table, Value};
use crate::store::import_report::ImportReport;

impl Probes for JobQueue {
    fn record_probe(&mut self, _probe: &NewProbe) -> Result<i64> {
        Err(self.refusal("probe"))
    }
}

/// A drill's verdict is read from settle's schema when one is there; a
/// drill of a job queue's task is not recorded yet.
impl Drills for JobQueue {
    fn record_drill(&mut self, _verdict: &DrillVerdict) -> Result<i64> {
        Err(self.refusal("record a drill verdict for"))
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

/// settle's worker never runs a job queue's jobs: the engine's own does.
impl Retries for JobQueue {
    fn claim_retry(
        &mut self,
        _worker: &str,
        _lease: Duration,
        _now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        Ok(None)
    }

    fn finish_retry(
        &mut self,
        _claim: &RetryClaim,
        _run: &RetryRun,
        _now: DateTime<Utc>,
    ) -> Result<Finish> {
        Err(self.refusal("run a retry of"))
    }
}

impl Import for JobQueue {
    fn import(
        &mut self,
        _operations: &[NewOperation],
        _contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        Err(self.refusal("import operations as"))
    }
}

impl Transfer for JobQueue {
    fn copy_rows(
        &self,
        _table: &Table,
        _each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        Err(self.refusal("copy"))
    }

    fn copy_from(&mut self, _source: &mut RowSource) -> Result<CopyReport> {
        Err(self.refusal("copy"))
    }
}
