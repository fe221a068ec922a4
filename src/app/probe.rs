//! Probing from the console, so an operator settling a row can ask the
//! receivers instead of guessing: `p` asks whether the effects of the
//! selected row, the marked rows, or (after a second `p` that confirms the
//! count) every row a `*` selection matches exist. The lookups run off the
//! screen's thread and report each answer as it is recorded; the status
//! line says how far they got. This file holds where a run stands and what
//! the prober reports; the keys are `probe_flow`'s, running and recording
//! `crate::console::effects::probe`'s.

use crate::domain::{OperationId, ProbeOutcome};

/// Where a probe of many rows stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Probing {
    /// The reader is listing the rows a selection matches; `filter` as
    /// typed, to show.
    Listing { filter: String },
    /// The rows are listed: a second `p` runs their lookups, any other key
    /// drops them.
    Confirm {
        ids: Vec<OperationId>,
        filter: String,
    },
    /// The lookups are running.
    Running(ProbeRun),
}

/// How far a run of lookups got.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeRun {
    pub total: usize,
    pub done: usize,
    pub found: usize,
    pub not_found: usize,
    pub unknown: usize,
    /// Probes whose answer came but could not be recorded, with why.
    pub unrecorded: Vec<(OperationId, String)>,
}

impl ProbeRun {
    /// `probing 3/12 · 2 found · 1 unknown`: the counts that are not zero.
    pub fn progress(&self) -> String {
        format!("probing {}/{}{}", self.done, self.total, self.tally())
    }

    pub(super) fn tally(&self) -> String {
        [
            (self.found, "found"),
            (self.not_found, "not found"),
            (self.unknown, "unknown"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(" · {n} {what}"))
        .collect()
    }
}

/// What the prober reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeNews {
    /// One lookup ended; `recorded` says whether its probe was written.
    Probed {
        op: OperationId,
        outcome: ProbeOutcome,
        recorded: Result<(), String>,
    },
    /// Every lookup ended, or the run stopped early and `stopped` says why
    /// (no receivers file, a ledger that cannot be written, …).
    Finished { stopped: Option<String> },
}
