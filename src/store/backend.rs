//! What a backend is: the contract every database behind
//! [`crate::store::Ledger`] fulfils, written once. A backend provides the
//! connection (opening, reconnecting, cancelling), the DDL of its schema
//! (creating, adopting, migrating), its dialect's spelling of each statement,
//! and the classification of its driver's errors into
//! [`crate::error::Error`]'s meanings (busy, connection lost, refused,
//! cancelled). It must not hold a rule or decide what anything means: the
//! rules live in [`crate::domain`], and what is shared between backends
//! (judging a decision on the fresh row, the retry plans, the hash chain,
//! counting groups) lives above them in `store` and is called by each.
//!
//! A new backend is one folder under `store/` implementing these traits and
//! one line in [`crate::store::registry`]: the ledger opens it, and every
//! parity case runs on it.
//!
//! The contract is split by concern, so each part can be read alone;
//! [`Backend`] is what a ledger holds: the parts every backend provides,
//! and an accessor for each part a backend may lack (a read model that
//! catches up, retries, import, copy), which the ledger asks for.

use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::chain::ChainVerdict;
use super::copy::{CopyReport, EachRow, RowSource, Table};
use super::detail;
use super::filter::{Statement, count_sql, id_end_sql, page_sql, range_sql};
use super::import_report::ImportReport;
use super::interrupt::InterruptHandle;
use super::open::{Access, OpenReport, Progress};
use super::sql::{Dialect, QueryDialect};
use crate::domain::Declarations;
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{
    CatchUp, Clusters, Decision, DecisionDraft, DecisionId, DecisionReceipt, DrillVerdict,
    NewOperation, NewProbe, OpTypeContract, OperationDetail, OperationId, OperationRow, Seek, Sort,
    SortKey, SortValue, StateCounts, TextSearch,
};
use crate::error::Result;
use crate::query::Query;

/// Who waits on the reads of one of the console's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiter {
    /// The operator, for a page, a detail or a filter's rows: the reads do
    /// only what their answer needs.
    Operator,
    /// Nobody (the header's counts): the reads also do the read model's
    /// upkeep that no answer needs first, such as looking through the
    /// ledger for changes no new row tells.
    Background,
}

/// A capability a backend may lack, as [`Backend::refusal`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capability {
    /// Running a claimed retry ([`Retries`]).
    Retries,
    /// Importing operations ([`Import`]).
    Import,
    /// Copying a ledger's rows, out or in ([`Transfer`]).
    Transfer,
}

/// Every part of the contract: what [`crate::store::Ledger`] holds.
/// `Send`: a ledger opened on one thread may be handed to another. The
/// parts a backend may lack are asked for, each by its accessor, `None`
/// where the backend does not offer it (as sqlx asks a connection for an
/// ability by a trait of its own).
pub(crate) trait Backend:
    Session + Reads + History + Decisions + Probes + Drills + Debug + Send
{
    /// The worker's side of `retry_requests`, if settle runs this
    /// backend's retries.
    fn retries(&mut self) -> Option<&mut dyn Retries> {
        None
    }

    /// Importing operations in bulk, if this backend takes them.
    fn importer(&mut self) -> Option<&mut dyn Import> {
        None
    }

    /// Copying this ledger's rows out, if it can be a copy's source.
    fn transfer(&self) -> Option<&dyn Transfer> {
        None
    }

    /// Copying rows in, if this ledger can be a copy's destination.
    fn transfer_mut(&mut self) -> Option<&mut dyn Transfer> {
        None
    }

    /// The read model the backend catches up, if it keeps one.
    fn read_model(&self) -> Option<&dyn ReadModel> {
        None
    }

    /// Why this ledger does not do what `lacking` offers, for a caller
    /// that asked for it and got `None`; nothing was written.
    fn refusal(&self, lacking: Capability) -> crate::error::Error {
        crate::error::Error::ledger(
            self.path(),
            format!(
                "this ledger cannot {}; nothing was written",
                match lacking {
                    Capability::Retries => "run a retry",
                    Capability::Import => "import operations",
                    Capability::Transfer => "copy",
                }
            ),
            "open a SQLite or PostgreSQL ledger for it".to_string(),
        )
    }
}

/// The open connection itself: where it is, whether it writes, and how it
/// tells another thread or process that something changed.
pub(crate) trait Session {
    /// Where the ledger is, as shown to a person (never a password).
    fn path(&self) -> &Path;

    /// The local file that holds the ledger, or None when a server holds
    /// it: the watcher checks the file's identity only for a file.
    fn file(&self) -> Option<&Path>;

    /// The schema version this binary writes for this backend.
    fn schema_version(&self) -> i64;

    /// Opened read-only, asked for or because the ledger cannot be written.
    fn is_read_only(&self) -> bool;

    /// Changes whenever another connection commits; the console polls it to
    /// show live changes without rereading anything. An error means the
    /// ledger cannot tell now (a server's connection is lost: later calls
    /// reconnect, and answer again once they have).
    fn data_version(&self) -> Result<i64>;

    /// Reads again which tables the ledger holds, after another connection
    /// adopted or migrated it, so reads use them from now on.
    fn reinspect(&mut self) -> Result<()>;

    /// A read failed with `failed`: when it was the connection to a server
    /// that the server had closed (a restart, a failover), a new one is
    /// made, and the read is worth asking once more. Reads only: a write
    /// cut off may have committed. None to make for a file.
    fn reconnect_after(&self, _failed: &crate::error::Error) -> bool {
        false
    }

    /// A deadline for one call of the contract that waits on a server
    /// (`write`: a decision, bounded by the ledger's wait as well): past
    /// it, the connection that stopped answering is cut, and the call
    /// fails as on a lost connection. None where nothing can stall (a
    /// file) or a stall cannot be cut.
    fn stall_deadline(&self, _write: bool) -> Option<crate::store::interrupt::Deadline> {
        None
    }

    /// A handle another thread may use to stop the read running on this
    /// ledger (the console cancels a page when the filter changes). The
    /// stopped read returns [`crate::error::Error::Interrupted`]; a handle
    /// used while nothing runs does nothing.
    fn interrupt_handle(&self) -> InterruptHandle;

    /// Why a ledger this backend opened read-only cannot take a write,
    /// told in the backend's own terms (a file's and its folder's
    /// permissions, a role's grants), for a command that must write.
    fn why_not_writable(&self) -> crate::error::Error;

    /// Refuses a write on a session opened read-only. [`crate::store::Ledger`]
    /// asks it before each write it hands on, so no write of the contract
    /// repeats the check.
    fn ensure_writable(&self) -> Result<()> {
        if self.is_read_only() {
            return Err(self.why_not_writable());
        }
        Ok(())
    }

    /// Why a write would not go through now, looked at again: None when it
    /// would, or when the ledger never writes; else why not, in a few
    /// words (a server's ledger whose primary went away). The console asks
    /// every second, so it turns read-only through a failover and writable
    /// again after it.
    fn writes_blocked(&mut self) -> Option<String> {
        None
    }

    /// Where the last read after this process's own decision read it
    /// from, and why, said once: a server's ledger read on a standby waits
    /// for it to replay the decision or reads the primary instead.
    fn read_from(&self) -> Option<String> {
        None
    }

    /// Takes the contracts the operator's receivers file declares: from
    /// now on every decision, every claimed retry and every detail is
    /// judged on them merged with `op_types`
    /// ([`crate::domain::declared::merged`]).
    fn declare(&mut self, declarations: Declarations);

    /// What [`Session::declare`] gave (empty until then).
    fn declarations(&self) -> &Declarations;

    /// How each ledger of a group stands (empty for one ledger).
    fn members(&self) -> Vec<crate::domain::MemberState> {
        Vec::new()
    }

    /// Keeps at most about `kib` KiB of pages in memory per database the
    /// connection reads, for a ledger that shares the process with others
    /// (a group's): a server's backend keeps its own, nothing to do.
    fn cache_within(&self, _kib: i64) {}
}

/// Reading operations: lists, counts, lookups. Every list, count and
/// lookup is a statement of [`crate::store::filter`] or
/// [`crate::store::detail`], built once for every backend in its
/// [`Reads::dialect`] by the provided methods; the backend only runs it
/// (the methods before [`Reads::page`]).
pub(crate) trait Reads: Session {
    /// This ledger's spelling of the shared statements.
    fn dialect(&self) -> &dyn Dialect;

    /// The dialect to read `query` in: [`Reads::dialect`], unless the
    /// backend keeps an index its text terms may use, and looks first
    /// whether it pays for them.
    fn dialect_for(&self, _query: &Query) -> Result<QueryDialect<'_>> {
        Ok(QueryDialect::Shared(self.dialect()))
    }

    /// The operations a page's statement selects, in the statement's order.
    fn operation_rows(&self, page: &Statement) -> Result<Vec<OperationRow>>;

    /// Hands each operation a list's statement selects to `each` as it is
    /// read, never all of them held in memory; `each` returning an error
    /// stops the read.
    fn stream_operation_rows(
        &self,
        list: &Statement,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()>;

    /// The number a count's statement gives.
    fn count_of(&self, count: &Statement) -> Result<i64>;

    /// The ids a lookup's statement selects, in its order; `doing` says
    /// what failed, in an error.
    fn ids_of(&self, lookup: &Statement, doing: &str) -> Result<Vec<i64>>;

    /// One page of the operations `query` matches, in id order (newest
    /// first) after `seek`: [`Reads::sorted_page`] in the default sort.
    fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let seek = seek.map(|id| SortKey {
            value: SortValue::Int(id.0),
            id,
        });
        self.sorted_page(query, Sort::default(), seek, limit, now)
    }

    /// One page in `sort` order after `seek` (keyset on the sort key and id,
    /// never OFFSET; ties broken by id); `seek` is a row's
    /// [`Sort::key_of`] in that same order.
    fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let (page, reverse) = page_sql(
            &*self.dialect_for(query)?,
            query,
            sort,
            seek,
            Some(limit),
            now,
        );
        let mut rows = self.operation_rows(&page)?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }

    /// Streams every match in id order (newest first), one statement read
    /// as it goes, never all held in memory; returns how many were seen.
    /// `each` returning an error stops the read.
    fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.for_each_sorted_row(query, Sort::default(), None, now, each)
    }

    /// [`Reads::for_each_row`] in `sort` order, from the first row or
    /// the rows `after` a key.
    fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        after: Option<SortKey>,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        let seek = after.map_or(Seek::First, Seek::After);
        let (list, _) = page_sql(&*self.dialect_for(query)?, query, sort, seek, None, now);
        let mut n = 0;
        self.stream_operation_rows(&list, &mut |row| {
            each(row)?;
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Whether a filter's page reads the operations here without an index
    /// for it (the ledger was not adopted yet, or what indexes it is not
    /// built yet), so a page of a rare match may read the whole ledger.
    /// Answered from what the backend already knows, running nothing: the
    /// console then reads filters a slice at a time
    /// ([`Reads::range_page`]) rather than wait on one long statement.
    fn filters_scan(&self) -> bool;

    /// How `err:` and free-text terms find their operations here.
    fn text_search(&self) -> TextSearch {
        TextSearch::Unindexed
    }

    /// The lowest and the highest operation id, `None` when there is no
    /// operation: two steps down the primary key.
    fn id_span(&self) -> Result<Option<(i64, i64)>> {
        let lowest = self.ids_of(
            &id_end_sql(self.dialect(), false),
            "finding the lowest operation id",
        )?;
        let highest = self.ids_of(
            &id_end_sql(self.dialect(), true),
            "finding the highest operation id",
        )?;
        Ok(lowest.first().copied().zip(highest.first().copied()))
    }

    /// The matches of `query` whose id is above `range.0` and at most
    /// `range.1`, newest first, at most `limit`: one statement the id range bounds through the primary key,
    /// however much of the ledger the filter would read otherwise.
    fn range_page(
        &self,
        query: &Query,
        range: (i64, i64),
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let page = range_sql(&*self.dialect_for(query)?, query, range, limit, now);
        self.operation_rows(&page)
    }

    /// How many operations `query` matches: exact, so it may scan; callers
    /// on the screen path run it off the UI thread.
    fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        self.count_of(&count_sql(&*self.dialect_for(query)?, query, now))
    }

    /// The number of operations in each state, and in the triage queue.
    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts>;

    /// The id an operation spec (an id, or `account/op_type/key`; the key
    /// may itself contain `/`) names.
    fn resolve(&self, spec: &str) -> Result<OperationId> {
        detail::resolve(self.dialect(), spec, self.path(), |lookup| {
            self.ids_of(lookup, "finding the operation")
        })
    }

    /// The operation with this idempotency key, if any.
    fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        detail::operation_by_key(self.dialect(), (account, op_type, key), |lookup| {
            self.ids_of(lookup, "finding an operation by its key")
        })
    }

    /// The top values of each dimension among the operations `query`
    /// matches (the console asks for the queue), the `top` biggest groups
    /// of each kept. Reads every matching row: run it off the screen's
    /// thread.
    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters>;
}

/// A read model the backend keeps beside the ledger and catches up on
/// what it has not read yet ([`Backend::read_model`]); a backend without
/// one reads the ledger as it is.
pub(crate) trait ReadModel {
    /// From now on a read catches up a bounded step of what the backend's
    /// own read model has not read yet, and reads what it holds, instead
    /// of catching up all of it first: the console, which says so
    /// ([`ReadModel::catching_up`]) and goes on with [`ReadModel::catch_up`].
    /// `waiter` says who waits on this connection's reads.
    fn catch_up_in_steps(&self, waiter: Waiter);

    /// How far the backend's read model is behind the ledger, as the last
    /// read or step left it (running nothing); None when it is current or
    /// there is none.
    fn catching_up(&self) -> Option<CatchUp>;

    /// One bounded step of catching up (tens of milliseconds); where it
    /// then stands.
    fn catch_up(&self) -> Result<Option<CatchUp>>;

    /// A read failed with `failed`: when the read model is to blame (its
    /// file damaged, deleted or replaced, or its catch-up failing, as on a
    /// full disk), it is set aside, reads go to the ledger's own tables
    /// until it is ready again, and the read is worth asking once more.
    fn set_aside(&self, failed: &crate::error::Error) -> bool;
}

/// One operation's history and the audit trail.
pub(crate) trait History {
    /// One operation with its attempts, events, decisions and retry requests.
    fn detail(&self, id: OperationId) -> Result<OperationDetail>;

    /// How many decisions lie after `seek` in the audit trail.
    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize>;

    /// One page of the audit trail after `seek`.
    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>>;

    /// Walks the decisions' hash chain and says where it breaks, if it does.
    fn verify_chain(&self) -> Result<ChainVerdict>;
}

/// Writing what an operator decided.
pub(crate) trait Decisions {
    /// Records one decision atomically: the version the operator saw is
    /// checked and the rules judged on the fresh row inside the transaction
    /// ([`crate::store::decide`]). Refuses it with
    /// [`crate::error::Error::Refused`] (a rule of the contract),
    /// [`crate::error::Error::VersionConflict`] (someone else wrote the
    /// operation since the operator looked) or
    /// [`crate::error::Error::Busy`] (another writer held the lock past the
    /// wait); a refusal writes nothing.
    fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt>;

    /// Records every draft of a batch in one transaction. Each row gets
    /// its own decision row (chained as one decision would be) or, in its
    /// place in the answer, the error that kept it out: refused, changed
    /// since it was listed (never overwritten), or not found. Any other
    /// error stops the batch with nothing of it written.
    fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>>;

    /// What [`Decisions::record_decisions`] would make of `draft` now,
    /// writing nothing: `Ok` when it would be written, else the row's error
    /// as the batch would give it. For the preview before a bulk decision.
    fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()>;
}

/// What a receiver said to a probe: evidence the operator decides on.
pub(crate) trait Probes {
    /// Appends one answer to `settle_probes` (append-only; a probe changes
    /// no operation); returns the probe's id.
    fn record_probe(&mut self, probe: &NewProbe) -> Result<i64>;
}

/// What drills proved about op types' receivers (`settle_drills`).
pub(crate) trait Drills {
    /// Appends one drill run's verdict (append-only; the table is made on
    /// first use); returns its id.
    fn record_drill(&mut self, verdict: &DrillVerdict) -> Result<i64>;

    /// The latest verdict recorded for `op_type`, if any.
    fn latest_drill(&self, op_type: &str) -> Result<Option<DrillVerdict>>;

    /// The `op_types` row of `op_type`: the contract a drill checks.
    fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>>;
}

/// The worker's side of `retry_requests`.
pub(crate) trait Retries {
    /// Claims the oldest retry request a worker may run now (queued, or
    /// claimed with a lease that has passed) for `worker` until
    /// `now + lease`, judging the rules again on the fresh row in the same
    /// transaction: a refused one is recorded as failed and returned as
    /// such, never run. `None`: nothing to claim.
    fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>>;

    /// Records how a claimed retry ran (the attempt, its events, the
    /// operation's state, the request's end) in one transaction, if the
    /// claim is still this worker's; otherwise writes nothing.
    fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish>;
}

/// Importing operations in bulk.
pub(crate) trait Import {
    /// Adds operations (and op type contracts) to the ledger; one already
    /// there under the same natural key is left as it is.
    fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport>;
}

/// Moving a whole ledger's rows to another, of either backend.
pub(crate) trait Transfer {
    /// Streams every row of `table` as neutral values, in the copy's order;
    /// returns how many were sent. A row is lent to `each`, never given:
    /// its text is freed by the thread that made it.
    fn copy_rows(&self, table: &Table, each: &mut EachRow) -> Result<u64>;

    /// Writes every table `source` streams, in one transaction; refuses a
    /// ledger that already holds operations or history.
    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport>;
}

/// An open ledger of some backend.
pub(crate) type Open = Box<dyn Backend>;

/// An open ledger, with what opening it did.
pub(crate) type Opened = (Open, OpenReport);

/// [`Kind::open`]: the ledger at a path, opened with this access, writes
/// waiting this long, adoption steps told to the callback.
pub(crate) type OpenFn = fn(&Path, Access, Duration, &mut dyn FnMut(Progress)) -> Result<Opened>;

/// A backend as [`crate::store::registry`] lists it: how to tell its
/// ledgers from the others' and how to create and open one.
pub(crate) struct Kind {
    /// Whether `path` names a ledger of this backend (an address, a file).
    pub claims: fn(&Path) -> bool,
    /// Creates a new, empty ledger; refuses an existing one.
    pub create: fn(&Path) -> Result<Box<dyn Backend>>,
    /// Creates a new ledger when none is there yet; `None` when one is,
    /// to be opened instead.
    pub create_if_absent: fn(&Path) -> Result<Option<Open>>,
    /// Opens an existing ledger, adopting or migrating a writable one;
    /// writes wait up to the given time for another writer's lock.
    pub open: OpenFn,
}
