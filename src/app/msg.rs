//! What crosses between the model and the shell: the [`Effect`]s `update`
//! asks for and the [`Msg`]s the shell reports back once it performed them
//! (or when the clock, the terminal size or the ledger changed). Plain data,
//! `Send`, so effects can be performed on another thread later.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::bulk::{BulkPreview, BulkWrite, Target};
use super::drill_files::{CaseKey, LoadedDrill};
use super::export::ExportRequest;
use super::pane::{ListId, Pane};
use super::probe::ProbeNews;
use super::window::{Fetch, Merge};
use crate::domain::{Clusters, Sort};
use crate::domain::{
    Decision, DecisionDraft, DecisionReceipt, OperationDetail, OperationId, OperationRow,
};
use crate::query::Query;
use crate::store::{Progress, StateCounts};

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
}

/// The rows a page request returned, tagged with where they go.
#[derive(Debug, Clone, PartialEq)]
pub enum PageRows {
    Operations {
        list: ListId,
        rows: Vec<OperationRow>,
    },
    Audit(Vec<Decision>),
}

impl PageRows {
    /// The pane these rows belong to.
    pub fn pane(&self) -> Pane {
        match self {
            PageRows::Operations { list, .. } => Pane::Operations(*list),
            PageRows::Audit(_) => Pane::Audit,
        }
    }
}

/// Numbers the model's page requests, newest highest: an answer to a
/// request older than the one that last replaced a list's rows is out of
/// date (the filter or view changed meanwhile) and is ignored.
pub type Ticket = u64;

/// What the shell must do for the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
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
    RecordDecisions(Vec<DecisionDraft>),
    /// Off the screen path: the worker answers with `CountsLoaded`.
    Count(Vec<(ListId, Query)>),
    /// Off the screen path too (the counter): the operations matching
    /// `query` grouped, `top` groups per dimension; answered with
    /// `ClustersLoaded`.
    LoadClusters {
        query: Query,
        top: usize,
    },
    /// Write rows to a new file, on the reader: it answers `Exported`.
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
    /// Write `template` on each target, guarded by its version, in batches
    /// on the writer; it answers with `BulkProgress` after each.
    RecordBulk {
        template: DecisionDraft,
        targets: Vec<Target>,
    },
    /// The operation an import of this drill case wrote, if the ledger
    /// holds it; answered with `DrillCaseFound`.
    FindDrillCase(CaseKey),
    /// The ids of the queue rows `query` matches, on the reader: answered
    /// with `ProbeTargetsListed`, so `p` can show the count it will probe.
    ListProbeTargets(Box<Query>),
    /// Run the lookups of these operations off the screen's thread and
    /// record each as a probe; answered with `Probe` news as each ends.
    Probe(Vec<OperationId>),
}

/// How one decision the shell tried to record ended.
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionOutcome {
    Recorded(DecisionReceipt),
    /// A rule refused it; nothing was written.
    Refused {
        rule: String,
        reason: String,
    },
    /// Someone else changed the operation first; nothing was written.
    Conflict {
        state: String,
        found: i64,
        last_writer: Option<String>,
    },
    /// Another process held the ledger's write lock for the whole busy
    /// timeout (`waited`); nothing was written, and trying again may work.
    Busy {
        waited: Duration,
    },
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecisionResult {
    pub op: OperationId,
    pub outcome: DecisionOutcome,
}

/// What the shell reports: results of effects, the clock, the terminal's
/// size and the ledger's liveness. Never what a key meant (that is an
/// [`crate::intent::Intent`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// The shell's clock, each tick.
    Tick(DateTime<Utc>),
    Resize(u16, u16),
    PageLoaded {
        ticket: Ticket,
        fetch: Fetch,
        merge: Merge,
        limit: usize,
        rows: PageRows,
    },
    /// A page request failed; the ticket says which.
    PageFailed {
        ticket: Ticket,
        message: String,
    },
    DetailLoaded(Box<OperationDetail>),
    FormDetailsLoaded(Vec<OperationDetail>),
    DecisionsRecorded(Vec<DecisionResult>),
    BulkPreviewed(Box<BulkPreview>),
    BulkProgress(BulkWrite),
    /// The state counts and each list's total, with the query it was
    /// counted for (a total for an older filter is ignored).
    CountsLoaded {
        counts: StateCounts,
        lists: Vec<(ListId, Query, i64)>,
    },
    /// The grouping the Clusters view asked for.
    ClustersLoaded(Clusters),
    /// The operation a drill case was imported as, or `None`.
    DrillCaseFound(CaseKey, Option<OperationId>),
    /// The rows a `*` selection matches, for `p` to confirm.
    ProbeTargetsListed(Vec<OperationId>),
    /// A lookup ended and was recorded, or the run ended.
    Probe(ProbeNews),
    /// A drill file read (again) from the watched folder.
    DrillLoaded(Box<LoadedDrill>),
    /// Another process committed to the ledger.
    LedgerChanged,
    /// Asking the ledger whether it changed failed: the screen may be stale.
    LiveLost(String),
    /// The ledger answers again after [`Msg::LiveLost`].
    LiveRestored,
    /// The path no longer names the file that was opened (deleted,
    /// replaced, renamed): what is shown is an orphan, and a decision would
    /// land in a file nobody reads.
    FileReplaced(String),
    /// The path names the opened file again.
    FileRestored,
    /// The ledger is being adopted (or migrated) on the writer: this step
    /// is running. It is shown read-only meanwhile.
    Adopting(Progress),
    /// The adoption ended: what it did, or why the ledger stays read-only.
    Adopted(Result<String, String>),
    LoadFailed(String),
    /// An export ended: the path as asked, and the rows written or why
    /// nothing was.
    Exported {
        path: String,
        outcome: Result<u64, String>,
    },
    /// Something worth telling that is not a failure (the ledger was
    /// adopted or migrated on open).
    Notice(String),
}
