//! Drilling from the console: `D` on an operation drills its op type's
//! receiver (`crate::drill::run`) off the screen's thread, as `p` probes;
//! the status line says which case of how many runs, and Esc or ctrl-c
//! cancels it. This file holds where a run stands and what the driller
//! reports; the keys are `drill_flow`'s.

/// A drill run the console started, until it ends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Drilling {
    pub op_type: String,
    /// Cases to play (0 until the driller says).
    pub total: usize,
    /// The case playing now (1-based) and its name.
    pub case: Option<(usize, String)>,
    /// Cases that ended, and those of them that missed their expectation.
    pub done: usize,
    pub failed: usize,
    /// Esc or ctrl-c asked it to stop: the calls running are being killed.
    pub cancelling: bool,
}

impl Drilling {
    /// `drilling place_order: case 3 of 12 (concurrent_same_key) · 1 failed
    /// · esc cancels`.
    pub fn progress(&self) -> String {
        if self.cancelling {
            return format!(
                "cancelling the drill of {}: killing the calls still running…",
                self.op_type
            );
        }
        let at = match &self.case {
            Some((n, case)) => format!(": case {n} of {} ({case})", self.total),
            None => ": starting".to_string(),
        };
        let failed = match self.failed {
            0 => String::new(),
            n => format!(" · {n} failed"),
        };
        format!("drilling {}{at}{failed} · esc cancels", self.op_type)
    }
}

/// How a run ended, as the driller tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillEnd {
    /// The verdict in one line (`place_order: no flaw found`).
    pub verdict: String,
    /// The results file, as written (`DIR/drill-<run>/drill-results.json`).
    pub results: String,
    /// Cancelled: the cases that finished are written, nothing recorded.
    pub interrupted: bool,
    /// The verdict's id in the ledger, or why it is not recorded.
    pub recorded: Result<i64, String>,
}

/// What the driller reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum DrillNews {
    /// Case `index` (1-based) of `total`, named `case`, starts.
    Case {
        index: usize,
        total: usize,
        case: String,
    },
    /// A case ended; `Some(false)`: it missed its expectation.
    CaseDone { passed: Option<bool> },
    /// The run ended (its results written), or never started: why.
    Finished(Result<DrillEnd, String>),
}
