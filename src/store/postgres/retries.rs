//! The worker's side of `retry_requests` on a PostgreSQL ledger: claiming
//! (`FOR UPDATE SKIP LOCKED` is the natural claim there) and finishing.
//! Not built yet: it needs the backend's detail read and decision writes,
//! which are being built; until then it says so rather than guess.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::Pg;
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::error::Result;

impl Pg {
    pub fn claim_retry(
        &mut self,
        _worker: &str,
        _lease: Duration,
        _now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        self.ensure_writable()?;
        Err(self.no_worker_yet())
    }

    pub fn finish_retry(
        &mut self,
        _claim: &RetryClaim,
        _run: &RetryRun,
        _now: DateTime<Utc>,
    ) -> Result<Finish> {
        self.ensure_writable()?;
        Err(self.no_worker_yet())
    }

    /// What a worker is told until this part is built.
    fn no_worker_yet(&self) -> crate::error::Error {
        crate::error::Error::ledger(
            &self.shown,
            "running retries is not available on PostgreSQL yet",
            "copy the ledger to SQLite with `settle copy` to run the worker there",
        )
    }
}
