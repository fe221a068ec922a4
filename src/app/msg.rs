//! What the shell reports back to the model: the [`Msg`]s that answer the
//! effects it performed (`effect`), and the clock, the terminal size and
//! the ledger's liveness. Plain data, `Send`, so effects can be performed
//! on another thread.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::bulk::{BulkPreview, BulkWrite};
use super::drills::files::{CaseKey, LoadedDrill};
use super::effect::{ScanRead, Ticket};
use super::pane::{ListId, Pane};
use super::probe::ProbeNews;
use super::window::{Fetch, Merge};
use crate::domain::{CatchUp, Clusters};
use crate::domain::{Decision, DecisionReceipt, OperationDetail, OperationId, OperationRow};
use crate::query::Query;
use crate::store::{Progress, ScanPlace, StateCounts};

/// The rows a page request returned, tagged with where they go.
#[derive(Debug, Clone, PartialEq)]
pub enum PageRows {
    Operations {
        list: ListId,
        rows: Vec<OperationRow>,
    },
    Audit(Vec<Decision>),
    /// What a scan's request found: `place` is where a step left the scan
    /// (`None` for a reread).
    Scanned {
        list: ListId,
        rows: Vec<OperationRow>,
        read: ScanRead,
        place: Option<ScanPlace>,
    },
}

impl PageRows {
    /// The pane these rows belong to.
    pub fn pane(&self) -> Pane {
        match self {
            PageRows::Operations { list, .. } | PageRows::Scanned { list, .. } => {
                Pane::Operations(*list)
            }
            PageRows::Audit(_) => Pane::Audit,
        }
    }
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
/// [`crate::console::input::intent::Intent`]).
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
    /// A drill case started or ended, or the run ended.
    Drill(super::drills::running::DrillNews),
    /// A drill file read (again) from the watched folder.
    DrillLoaded(Box<LoadedDrill>),
    /// Another process committed to the ledger.
    LedgerChanged,
    /// Whether the ledger's filters are read without an index (it has
    /// none yet), said when it changes: such a filter is then scanned.
    FiltersScan(bool),
    /// How far the read model is behind the ledger, while it catches up;
    /// `None` once it has caught up.
    CatchingUp(Option<CatchUp>),
    /// How each ledger of a group stands, said when it changes.
    Members(Vec<crate::domain::MemberState>),
    /// Asking the ledger whether it changed failed: the screen may be stale.
    LiveLost(String),
    /// The ledger answers again after [`Msg::LiveLost`].
    LiveRestored,
    /// Where a read after the operator's own decision read it from: a
    /// standby that caught up with it, or the primary.
    ReadFrom(String),
    /// Whether a write would go through, said when it changes: why not
    /// (no primary reachable), or None once it would again.
    WritesBlocked(Option<String>),
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
