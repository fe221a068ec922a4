//! What the model asks the shell to do: the [`Effect`]s `update` and
//! `apply` return, sorted by the worker that performs each. Plain data,
//! `Send`, so effects are performed on other threads.

use super::bulk::Target;
use super::drills::files::CaseKey;
use super::export::ExportRequest;
use super::pane::ListId;
use super::window::{Fetch, Merge};
use crate::domain::{DecisionDraft, OperationId, Sort};
use crate::query::Query;
use crate::store::ScanPlace;

/// Which rows a page request reads.
#[derive(Debug, Clone, PartialEq)]
pub enum PageSource {
    /// One of the operation lists, through its current query, in its order.
    Operations {
        list: ListId,
        query: Query,
        sort: Sort,
    },
    /// The audit trail, newest decision first.
    Audit,
    /// One slice of an operation list's filter read by id ranges, where
    /// the ledger has no index for filters yet.
    Scan {
        list: ListId,
        query: Query,
        read: ScanRead,
    },
}

/// What a scan's request reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScanRead {
    /// The next slice after this place (a new scan when `None`).
    Step(Option<ScanPlace>),
    /// The matches among the ids above the first and up to the second
    /// again: the rows held, after another process wrote.
    Reread(i64, i64),
}

/// Numbers the model's page requests, newest highest: an answer to a
/// request older than the one that last replaced a list's rows is out of
/// date (the filter or view changed meanwhile) and is ignored.
pub type Ticket = u64;

/// What the shell must do for the model, by who carries it out: the
/// compiler checks that every effect reaches the worker that performs it,
/// and a worker is handed only what it can perform.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// On the reader, the connection the screen reads through.
    Read(Read),
    /// On the writer, the connection that records decisions.
    Write(Write),
    /// On the counter, off the screen's path: counting may scan.
    Count(Count),
    /// Run the lookups of these operations off the screen's thread, on a
    /// prober of their own, and record each as a probe; answered with
    /// `Probe` news as each ends.
    Probe(Vec<OperationId>),
    /// Drill this op type's receiver off the screen's thread (results in
    /// the drill folder, the verdict recorded); answered with `Drill` news.
    Drill(String),
    /// Stop the drill run: no call starts, those running are killed.
    CancelDrill,
}

/// What the reader performs: one at a time, newest first, a superseded
/// one interrupted.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    LoadPage {
        ticket: Ticket,
        /// Boxed: a query is large and effects are moved around a lot.
        source: Box<PageSource>,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
    },
    LoadDetail(OperationId),
    LoadFormDetails(Vec<OperationId>),
    /// Write rows to a new file, streamed from the reader's connection:
    /// it answers `Exported`.
    Export(Box<ExportRequest>),
    /// Stop judging a selection the operator dropped: the reader
    /// interrupts a running `PreviewBulk` and forgets a waiting one.
    CancelBulkPreview,
    /// Judge `template` on every row `query` matches (the reader answers
    /// with `BulkPreviewed`), keeping each row's id and version.
    PreviewBulk {
        query: Box<Query>,
        template: DecisionDraft,
    },
    /// The operation an import of this drill case wrote, if the ledger
    /// holds it; answered with `DrillCaseFound`.
    FindDrillCase(CaseKey),
    /// The ids of the queue rows `query` matches: answered with
    /// `ProbeTargetsListed`, so `p` can show the count it will probe.
    ListProbeTargets(Box<Query>),
}

/// What the writer performs, in the order asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Each draft in its own guarded transaction; answered with one
    /// `DecisionsRecorded`.
    Decisions(Vec<DecisionDraft>),
    /// Write `template` on each target, guarded by its version, in
    /// batches; it answers with `BulkProgress` after each.
    Bulk {
        template: DecisionDraft,
        targets: Vec<Target>,
    },
}

/// What the counter performs.
#[derive(Debug, Clone, PartialEq)]
pub enum Count {
    /// The state counts and each list's total; answered with
    /// `CountsLoaded`.
    Lists(Vec<(ListId, Query)>),
    /// The operations matching `query` grouped, `top` groups per
    /// dimension; answered with `ClustersLoaded`.
    Clusters { query: Query, top: usize },
    /// The Clusters view was left: a grouping waiting is dropped and one
    /// running is stopped (a grouping reads the whole queue: seconds at
    /// 10M). Answered with nothing.
    StopGrouping,
}
