//! Every SQL statement of settle lives under this module, behind [`Ledger`]:
//! opening, adopting and migrating a ledger, paging through operations,
//! reading one operation's history, recording decisions atomically,
//! importing operations. It returns [`crate::domain`] types; nothing outside
//! `store` sees a row, a statement, or which database is underneath. Each
//! backend is a submodule with one file per concern; this file only
//! dispatches, and the rules stay in `domain`.

mod cells;
mod chain;
mod copy;
mod detail;
mod filter;
mod import;
mod import_report;
mod interrupt;
mod open;
pub mod postgres;
pub mod receiver;
mod rows;
mod sql;
pub mod sqlite;
mod tables;
mod tally;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{
    Clusters, Decision, DecisionDraft, DecisionId, DecisionReceipt, NewOperation, NewProbe,
    OpTypeContract, OperationDetail, OperationId, OperationRow, Sort, SortKey,
};
use crate::error::Result;
use crate::query::Query;

pub use crate::domain::{Seek, StateCounts};
pub use chain::ChainVerdict;
pub use copy::CopyReport;
pub use import_report::ImportReport;
pub use interrupt::InterruptHandle;
pub use open::{Access, BUSY_TIMEOUT, OpenReport, Progress};
pub use sqlite::schema;
pub use sqlite::service::create_service_ledger;

/// An open ledger, whichever database holds it.
#[derive(Debug)]
pub struct Ledger {
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(Box<postgres::Pg>),
}

/// Runs the same call on whichever backend holds the ledger.
macro_rules! dispatch {
    ($ledger:expr, $db:ident => $call:expr) => {
        match $ledger {
            Backend::Sqlite($db) => $call,
            Backend::Postgres($db) => $call,
        }
    };
}

impl Ledger {
    /// Creates a new, empty ledger at `path` (a SQLite file, or a
    /// PostgreSQL address: see [`postgres::is_address`]). Refuses an
    /// existing one.
    pub fn create(path: &Path) -> Result<Ledger> {
        if postgres::is_address(path) {
            let db = postgres::Pg::create(&postgres::Address::parse(path)?)?;
            return Ok(Ledger::from(db));
        }
        Ok(Ledger::from(sqlite::Sqlite::create(path)?))
    }

    /// The ledger at `path` for a copy to write: a SQLite file is created
    /// when missing, a PostgreSQL database gets settle's tables when it has
    /// none; an existing ledger is opened to write (and adopted).
    pub fn open_or_create(path: &Path) -> Result<(Ledger, OpenReport)> {
        if postgres::is_address(path) {
            // Creating refuses a database that already has the tables;
            // opening then says what is wrong, if anything.
            if let Ok(db) = postgres::Pg::create(&postgres::Address::parse(path)?) {
                return Ok((Ledger::from(db), OpenReport::default()));
            }
        } else if !path.exists() {
            return Ok((Ledger::create(path)?, OpenReport::default()));
        }
        Ledger::open(path, Access::ReadWrite)
    }

    /// Opens an existing ledger. A writable ledger created by a service
    /// (schema version 0) or by an older settle is adopted or migrated in one
    /// transaction; a read-only one is only read.
    pub fn open(path: &Path, access: Access) -> Result<(Ledger, OpenReport)> {
        Ledger::open_with_progress(path, access, &mut |_| {})
    }

    /// [`Ledger::open`], calling `progress` before each step of an adoption
    /// or migration (building the indexes of a big ledger takes a while). A
    /// read-only open never adopts, so it never calls `progress`.
    pub fn open_with_progress(
        path: &Path,
        access: Access,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Ledger, OpenReport)> {
        Ledger::open_waiting(path, access, BUSY_TIMEOUT, progress)
    }

    /// [`Ledger::open_with_progress`] whose writes (an adoption included)
    /// wait up to `wait` for another writer's lock before failing with
    /// [`crate::error::Error::Busy`].
    pub fn open_waiting(
        path: &Path,
        access: Access,
        wait: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Ledger, OpenReport)> {
        if postgres::is_address(path) {
            let address = postgres::Address::parse(path)?;
            let (db, report) = postgres::Pg::open_waiting(&address, access, wait, progress)?;
            return Ok((Ledger::from(db), report));
        }
        let (db, report) = sqlite::Sqlite::open_waiting(path, access, wait, progress)?;
        Ok((Ledger::from(db), report))
    }

    /// Where the ledger is, as shown to a person (never a password).
    pub fn path(&self) -> &Path {
        dispatch!(&self.backend, db => db.path())
    }

    /// The schema version this binary writes for this ledger's backend.
    pub fn schema_version(&self) -> i64 {
        match &self.backend {
            Backend::Sqlite(_) => sqlite::schema::SCHEMA_VERSION,
            Backend::Postgres(_) => postgres::schema::SCHEMA_VERSION,
        }
    }

    /// The local file that holds the ledger, or None when a server holds
    /// it: the watcher checks the file's identity only for a file.
    pub fn file(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sqlite(db) => Some(db.path()),
            Backend::Postgres(_) => None,
        }
    }

    pub fn is_read_only(&self) -> bool {
        dispatch!(&self.backend, db => db.is_read_only())
    }

    /// Changes whenever another connection commits; the console polls it to
    /// show live changes without rereading anything. An error means the
    /// ledger cannot tell now (a server's connection is lost: later calls
    /// reconnect, and answer again once they have).
    pub fn data_version(&self) -> Result<i64> {
        dispatch!(&self.backend, db => db.data_version())
    }

    /// Reads again which tables the ledger holds, after another connection
    /// adopted or migrated it, so reads use them from now on.
    pub fn reinspect(&mut self) -> Result<()> {
        dispatch!(&mut self.backend, db => db.reinspect())
    }

    /// A handle another thread may use to stop the read running on this
    /// ledger (the console cancels a page when the filter changes). The
    /// stopped read returns [`crate::error::Error::Interrupted`]; a handle
    /// used while nothing runs does nothing.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        dispatch!(&self.backend, db => db.interrupt_handle())
    }

    /// One page of the operations `query` matches, in id order after `seek`.
    pub fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        dispatch!(&self.backend, db => db.page(query, seek, limit, now))
    }

    /// One page in `sort` order after `seek` (keyset on the sort key and id).
    pub fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        dispatch!(&self.backend, db => db.sorted_page(query, sort, seek, limit, now))
    }

    /// Streams every match in id order; returns how many were seen.
    pub fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        dispatch!(&self.backend, db => db.for_each_row(query, now, each))
    }

    /// Streams every match in `sort` order; returns how many were seen.
    pub fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        now: DateTime<Utc>,
        each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        dispatch!(&self.backend, db => db.for_each_sorted_row(query, sort, now, each))
    }

    /// How many operations `query` matches.
    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        dispatch!(&self.backend, db => db.count(query, now))
    }

    /// The number of operations in each state, and in the triage queue.
    pub fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        dispatch!(&self.backend, db => db.state_counts(now))
    }

    /// The id an operation spec (an id, or `account/op_type/key`) names.
    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        dispatch!(&self.backend, db => db.resolve(spec))
    }

    /// The operation with this idempotency key, if any.
    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        dispatch!(&self.backend, db => db.operation_by_key(account, op_type, key))
    }

    /// The top values of each dimension among the operations `query` matches.
    pub fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        dispatch!(&self.backend, db => db.clusters(query, now, top))
    }

    /// One operation with its attempts, events, decisions and retry requests.
    pub fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        dispatch!(&self.backend, db => db.detail(id))
    }

    /// How many decisions lie after `seek` in the audit trail.
    pub fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        dispatch!(&self.backend, db => db.audit_count(seek))
    }

    /// One page of the audit trail after `seek`.
    pub fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        dispatch!(&self.backend, db => db.audit_page(seek, limit))
    }

    /// Walks the decisions' hash chain and says where it breaks, if it does.
    pub fn verify_chain(&self) -> Result<ChainVerdict> {
        dispatch!(&self.backend, db => db.verify_chain())
    }

    /// Records one decision atomically: the version the operator saw is
    /// checked and the rules judged on the fresh row inside the transaction.
    pub fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        dispatch!(&mut self.backend, db => db.record_decision(draft, now))
    }

    /// Records many decisions, each judged and written on its own.
    pub fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        dispatch!(&mut self.backend, db => db.record_decisions(drafts, now))
    }

    /// Judges a draft against the rules on the current row, writing nothing.
    pub fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        dispatch!(&self.backend, db => db.judge_decision(draft, now))
    }

    /// Appends what a receiver said to a probe (`settle_probes`); returns
    /// the probe's id.
    pub fn record_probe(&mut self, probe: &NewProbe) -> Result<i64> {
        dispatch!(&mut self.backend, db => db.record_probe(probe))
    }

    /// Adds operations (and op type contracts) to the ledger.
    pub fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        dispatch!(&mut self.backend, db => db.import(operations, contracts))
    }
}

impl Ledger {
    /// Claims the oldest retry request a worker may run now (queued, or
    /// claimed with a lease that has passed) for `worker` until
    /// `now + lease`, judging the rules again on the fresh row in the same
    /// transaction: a refused one is recorded as failed and returned as
    /// such, never run. `None`: nothing to claim.
    pub fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        dispatch!(&mut self.backend, db => db.claim_retry(worker, lease, now))
    }

    /// Records how a claimed retry ran (the attempt, its events, the
    /// operation's state, the request's end) in one transaction, if the
    /// claim is still this worker's; otherwise writes nothing.
    pub fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish> {
        dispatch!(&mut self.backend, db => db.finish_retry(claim, run, now))
    }

    /// Copies every row of this ledger (operations, attempts, events,
    /// decisions with their chain hashes, retry requests, op types) into
    /// `destination`, in id order, in one transaction there; refuses a
    /// destination that already holds operations or history. Either
    /// backend to either.
    pub fn copy_into(&self, destination: &mut Ledger) -> Result<CopyReport> {
        let mut source =
            |table: &copy::Table, each: &mut dyn FnMut(Vec<copy::Value>) -> Result<()>| dispatch!(&self.backend, db => db.copy_rows(table, each));
        dispatch!(&mut destination.backend, db => db.copy_from(&mut source))
    }
}

impl From<postgres::Pg> for Ledger {
    fn from(db: postgres::Pg) -> Ledger {
        Ledger {
            backend: Backend::Postgres(Box::new(db)),
        }
    }
}

impl From<sqlite::Sqlite> for Ledger {
    fn from(db: sqlite::Sqlite) -> Ledger {
        Ledger {
            backend: Backend::Sqlite(db),
        }
    }
}
