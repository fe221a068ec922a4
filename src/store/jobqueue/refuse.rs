//! What settle does not write on a job queue, refused before anything is
//! written: imports and copies answer why, naming the engine
//! ([`JobQueue::refusal`]); settle's worker never runs a job (the engine's
//! own does).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::session::JobQueue;
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{NewOperation, OpTypeContract};
use crate::error::Result;
use crate::store::backend::{Import, Retries, Transfer};
use crate::store::copy::{CopyReport, EachRow, RowSource, Table};
use crate::store::import_report::ImportReport;

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
    fn copy_rows(&self, _table: &Table, _each: &mut EachRow) -> Result<u64> {
        Err(self.refusal("copy"))
    }

    fn copy_from(&mut self, _source: &mut RowSource) -> Result<CopyReport> {
        Err(self.refusal("copy"))
    }
}
