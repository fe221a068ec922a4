//! Every SQL statement of settle lives under this module, behind [`Ledger`]:
//! opening, adopting and migrating a ledger, paging through operations,
//! reading one operation's history, recording decisions atomically,
//! importing operations. It returns [`crate::domain`] types; nothing outside
//! `store` sees a row, a statement, or which database is underneath. What a
//! backend must provide is written once in [`backend`]; which backends there
//! are, in [`registry`]. Each backend is a submodule with one file per
//! concern; this file only forwards, and the rules stay in `domain`.

mod backend;
mod cells;
mod chain;
mod copy;
mod decide;
mod detail;
mod drills;
mod filter;
pub mod group;
mod import;
mod import_report;
mod interrupt;
mod jobqueue;
mod open;
#[cfg(test)]
mod parity;
pub mod postgres;
mod registry;
mod retries;
mod rows;
mod scan;
mod sql;
pub mod sqlite;
mod tables;
mod tally;
mod timeline;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{
    CatchUp, Clusters, Decision, DecisionDraft, DecisionId, DecisionReceipt, Declarations,
    NewOperation, NewProbe, OpTypeContract, OperationDetail, OperationId, OperationRow, Sort,
    SortKey, TextSearch,
};
use crate::error::Result;
use crate::query::Query;
pub use backend::Waiter;
use backend::{Backend, Capability};

pub use crate::domain::{Seek, StateCounts};
pub use chain::ChainVerdict;
pub use copy::CopyReport;
pub use import_report::ImportReport;
use interrupt::Deadline;
#[cfg(test)]
pub(crate) use interrupt::Interrupt;
pub use interrupt::InterruptHandle;
pub use jobqueue::{use_locked_after, use_mapping, use_removal};
pub use open::{Access, BUSY_TIMEOUT, OpenReport, Progress};
pub use scan::{STEP_IDS, ScanPlace, ScanStep};
pub use sqlite::schema;
pub use sqlite::service::create_service_ledger;

/// A short name for the ledger at `path`, to tell several apart in one
/// list without opening them: a SQLite file's stem (`payments.db` is
/// `payments`), a PostgreSQL address's database name.
pub fn short_name(path: &Path) -> String {
    if postgres::is_address(path) {
        return postgres::Address::parse(path)
            .map(|a| a.database().to_string())
            .unwrap_or_else(|_| "postgres".to_string());
    }
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// An open ledger, whichever database holds it.
#[derive(Debug)]
pub struct Ledger {
    backend: Box<dyn Backend>,
}

impl Ledger {
    /// Creates a new, empty ledger at `path` (a SQLite file, or a
    /// PostgreSQL address: see [`postgres::is_address`]). Refuses an
    /// existing one.
    pub fn create(path: &Path) -> Result<Ledger> {
        let backend = (registry::kind_of(path).create)(path)?;
        Ok(Ledger { backend })
    }

    /// The ledger at `path` for a copy to write: a SQLite file is created
    /// when missing, a PostgreSQL database gets settle's tables when it has
    /// none; an existing ledger is opened to write (and adopted).
    pub fn open_or_create(path: &Path) -> Result<(Ledger, OpenReport)> {
        if let Some(backend) = (registry::kind_of(path).create_if_absent)(path)? {
            return Ok((Ledger { backend }, OpenReport::default()));
        }
        Ledger::open(path, Access::ReadWrite)
    }

    /// A ledger over a backend made elsewhere (a group of ledgers,
    /// [`group`], which sits above the backends and opens its own).
    pub(crate) fn from_backend(backend: Box<dyn Backend>) -> Ledger {
        Ledger { backend }
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
        let (backend, report) = (registry::kind_of(path).open)(path, access, wait, progress)?;
        Ok((Ledger { backend }, report))
    }
}

/// Each call below is the contract's ([`backend`]), documented there.
impl Ledger {
    pub fn path(&self) -> &Path {
        self.backend.path()
    }

    pub fn schema_version(&self) -> i64 {
        self.backend.schema_version()
    }

    pub fn file(&self) -> Option<&Path> {
        self.backend.file()
    }

    pub fn is_read_only(&self) -> bool {
        self.backend.is_read_only()
    }

    /// Why this ledger, opened read-only though a write was asked for,
    /// cannot take one: for a command to say what to fix.
    pub fn why_not_writable(&self) -> crate::error::Error {
        self.backend.why_not_writable()
    }

    /// How each ledger of a group stands, as the last read left it
    /// (empty for one ledger).
    pub fn members(&self) -> Vec<crate::domain::MemberState> {
        self.backend.members()
    }

    /// See [`backend::Session::cache_within`].
    pub(crate) fn cache_within(&self, kib: i64) {
        self.backend.cache_within(kib);
    }

    pub fn data_version(&self) -> Result<i64> {
        self.backend.data_version()
    }

    /// Why a write would not go through now (no primary reachable), looked
    /// at again; None when it would.
    pub fn writes_blocked(&mut self) -> Option<String> {
        self.backend.writes_blocked()
    }

    /// Where the last read after this process's own decision read it from
    /// (a standby that caught up, or the primary), said once.
    pub fn read_from(&self) -> Option<String> {
        self.backend.read_from()
    }

    /// Runs `read`, and once more when [`Ledger::worth_again`] says so;
    /// not after a stall, which the same connection path would meet again.
    fn read<T>(&self, read: impl Fn(&dyn Backend) -> Result<T>) -> Result<T> {
        let deadline = self.backend.stall_deadline(false);
        let first = read(&*self.backend);
        let first = stalled(first, deadline.as_ref());
        first.or_else(|e| {
            if !deadline.as_ref().is_some_and(Deadline::passed) && self.worth_again(&e) {
                let again = self.backend.stall_deadline(false);
                stalled(read(&*self.backend), again.as_ref())
            } else {
                Err(e)
            }
        })
    }

    /// A write, bounded as [`Ledger::read`] is against a stall (never
    /// asked again: it may have committed).
    fn write<T>(&mut self, write: impl FnOnce(&mut dyn Backend) -> Result<T>) -> Result<T> {
        let deadline = self.backend.stall_deadline(true);
        stalled(write(&mut *self.backend), deadline.as_ref())
    }

    /// Whether a read that failed with `e` is worth asking once more: the
    /// backend's read model was to blame and is set aside, or the server
    /// had closed the connection and a new one is made.
    fn worth_again(&self, e: &crate::error::Error) -> bool {
        self.backend.reconnect_after(e)
            || self
                .backend
                .read_model()
                .is_some_and(|model| model.set_aside(e))
    }

    /// [`Ledger::read`] for a read that hands out rows as it goes: asked
    /// once more only when it failed before its first row.
    fn stream(
        &self,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
        read: impl Fn(&dyn Backend, &mut dyn FnMut(OperationRow) -> Result<()>) -> Result<u64>,
    ) -> Result<u64> {
        let mut given = false;
        let deadline = self.backend.stall_deadline(false);
        let mut counted = |row| {
            given = true;
            if let Some(deadline) = &deadline {
                deadline.progress();
            }
            each(row)
        };
        let first = read(&*self.backend, &mut counted);
        match stalled(first, deadline.as_ref()) {
            Err(e)
                if !given
                    && !deadline.as_ref().is_some_and(Deadline::passed)
                    && self.worth_again(&e) =>
            {
                let again = self.backend.stall_deadline(false);
                let mut counted = |row| {
                    if let Some(deadline) = &again {
                        deadline.progress();
                    }
                    each(row)
                };
                stalled(read(&*self.backend, &mut counted), again.as_ref())
            }
            done => done,
        }
    }

    pub fn reinspect(&mut self) -> Result<()> {
        self.backend.reinspect()
    }

    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.backend.interrupt_handle()
    }

    pub fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        self.read(|b| b.page(query, seek, limit, now))
    }

    pub fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        self.read(|b| b.sorted_page(query, sort, seek.clone(), limit, now))
    }

    pub fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        mut each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.stream(&mut each, |b, each| b.for_each_row(query, now, each))
    }

    pub fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        after: Option<SortKey>,
        now: DateTime<Utc>,
        mut each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.stream(&mut each, |b, each| {
            b.for_each_sorted_row(query, sort, after.clone(), now, each)
        })
    }

    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        self.read(|b| b.count(query, now))
    }

    pub fn filters_scan(&self) -> bool {
        self.backend.filters_scan()
    }

    pub fn text_search(&self) -> TextSearch {
        self.backend.text_search()
    }

    /// See [`backend::ReadModel::catch_up_in_steps`]; a backend without a
    /// read model has nothing to catch up.
    pub fn catch_up_in_steps(&self, waiter: Waiter) {
        if let Some(model) = self.backend.read_model() {
            model.catch_up_in_steps(waiter);
        }
    }

    pub fn catching_up(&self) -> Option<CatchUp> {
        self.backend.read_model().and_then(|m| m.catching_up())
    }

    pub fn catch_up(&self) -> Result<Option<CatchUp>> {
        match self.backend.read_model() {
            Some(model) => model.catch_up(),
            None => Ok(None),
        }
    }

    pub fn range_page(
        &self,
        query: &Query,
        range: (i64, i64),
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        self.read(|b| b.range_page(query, range, limit, now))
    }

    /// The lowest and the highest operation id (None: no operation).
    pub(crate) fn id_span(&self) -> Result<Option<(i64, i64)>> {
        self.read(|b| b.id_span())
    }

    /// The next slice of a scan of `query` (see [`scan`]).
    pub fn scan_step(
        &self,
        query: &Query,
        from: Option<ScanPlace>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<ScanStep> {
        self.read(|b| scan::step(b, query, from, limit, now))
    }

    pub fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        self.read(|b| b.state_counts(now))
    }

    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        self.backend.resolve(spec)
    }

    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        self.backend.operation_by_key(account, op_type, key)
    }

    pub fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        self.read(|b| b.clusters(query, now, top))
    }

    /// The operation with what the receivers file declares of its type
    /// ([`Ledger::declare`]).
    pub fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        let mut detail = self.read(|b| b.detail(id))?;
        detail.declare(self.backend.declarations());
        Ok(detail)
    }

    /// Takes the contracts the receivers file declares: every detail,
    /// decision and claimed retry from now on is judged on them merged
    /// with `op_types` (the stricter wins where both declare).
    pub fn declare(&mut self, declarations: Declarations) {
        self.backend.declare(declarations);
    }

    pub fn declarations(&self) -> &Declarations {
        self.backend.declarations()
    }

    pub fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        self.backend.audit_count(seek)
    }

    pub fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        self.backend.audit_page(seek, limit)
    }

    pub fn verify_chain(&self) -> Result<ChainVerdict> {
        self.backend.verify_chain()
    }

    pub fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        self.backend.ensure_writable()?;
        self.write(|b| b.record_decision(draft, now))
    }

    pub fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        self.backend.ensure_writable()?;
        self.write(|b| b.record_decisions(drafts, now))
    }

    pub fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        self.backend.judge_decision(draft, now)
    }

    pub fn record_probe(&mut self, probe: &NewProbe) -> Result<i64> {
        self.backend.ensure_writable()?;
        self.backend.record_probe(probe)
    }

    pub fn record_drill(&mut self, verdict: &crate::domain::DrillVerdict) -> Result<i64> {
        self.backend.ensure_writable()?;
        self.backend.record_drill(verdict)
    }

    pub fn latest_drill(&self, op_type: &str) -> Result<Option<crate::domain::DrillVerdict>> {
        self.backend.latest_drill(op_type)
    }

    pub fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>> {
        self.backend.op_type_contract(op_type)
    }

    pub fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        // Asked first, said only where the backend imports at all.
        let writable = self.backend.ensure_writable();
        match self.backend.importer() {
            Some(importer) => writable.and_then(|()| importer.import(operations, contracts)),
            None => Err(self.backend.refusal(Capability::Import)),
        }
    }

    pub fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        // A backend whose retries settle does not run has none to claim.
        let writable = self.backend.ensure_writable();
        match self.backend.retries() {
            Some(retries) => writable.and_then(|()| retries.claim_retry(worker, lease, now)),
            None => Ok(None),
        }
    }

    pub fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish> {
        let writable = self.backend.ensure_writable();
        match self.backend.retries() {
            Some(retries) => writable.and_then(|()| retries.finish_retry(claim, run, now)),
            None => Err(self.backend.refusal(Capability::Retries)),
        }
    }

    /// Copies every row of this ledger (operations, attempts, events,
    /// decisions with their chain hashes, retry requests, op types) into
    /// `destination`, in id order, in one transaction there; refuses a
    /// destination that already holds operations or history. Either
    /// backend to either.
    /// `progress` hears each table's name and the rows copied so far, every
    /// [`COPY_PROGRESS_EVERY`] rows and at its end.
    pub fn copy_into(
        &self,
        destination: &mut Ledger,
        progress: &mut dyn FnMut(&str, u64),
    ) -> Result<CopyReport> {
        let source = &self.backend;
        let writable = destination.backend.ensure_writable();
        let Some(into) = destination.backend.transfer_mut() else {
            return Err(destination.backend.refusal(Capability::Transfer));
        };
        writable?;
        into.copy_from(&mut |table, each| {
            // Asked as each table is read, as the source was before.
            let Some(out) = source.transfer() else {
                return Err(source.refusal(Capability::Transfer));
            };
            let mut n = 0u64;
            let rows = out.copy_rows(table, &mut |values| {
                n += 1;
                if n.is_multiple_of(COPY_PROGRESS_EVERY) {
                    progress(table.name, n);
                }
                each(values)
            })?;
            progress(table.name, rows);
            Ok(rows)
        })
    }
}

/// How many rows a copy moves between two reports of its progress.
pub const COPY_PROGRESS_EVERY: u64 = 10_000;

#[cfg(test)]
impl From<postgres::Pg> for Ledger {
    fn from(db: postgres::Pg) -> Ledger {
        Ledger {
            backend: Box::new(db),
        }
    }
}

#[cfg(test)]
impl From<sqlite::Sqlite> for Ledger {
    fn from(db: sqlite::Sqlite) -> Ledger {
        Ledger {
            backend: Box::new(db),
        }
    }
}

/// A call's outcome said as a stall when its deadline passed and cut the
/// connection under it: the error then says how long settle waited.
fn stalled<T>(done: Result<T>, deadline: Option<&Deadline>) -> Result<T> {
    match deadline {
        Some(deadline) if deadline.passed() => done.map_err(|e| e.stalled(deadline.within())),
        _ => done,
    }
}
