//! A probe: what a receiver said when asked by the idempotency key whether
//! an operation's effect exists, since only the receiver knows. Recorded
//! append-only in `settle_probes`; shown as evidence and used to pre-fill a
//! decision. A probe is evidence for the operator, never a decision by
//! itself.

use super::ids::OperationId;

/// What the receiver's `lookup` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The effect exists; the probe carries its result id.
    Found,
    /// The receiver states it has no record of the key.
    NotFound,
    /// No answer that means either: another exit, a timeout, no lookup.
    Unknown,
}

impl ProbeOutcome {
    /// The word stored in `settle_probes.outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeOutcome::Found => "found",
            ProbeOutcome::NotFound => "not_found",
            ProbeOutcome::Unknown => "unknown",
        }
    }

    /// Reads a stored word; anything else (a row written by hand) is
    /// unknown, never found.
    pub fn parse(word: &str) -> ProbeOutcome {
        match word {
            "found" => ProbeOutcome::Found,
            "not_found" => ProbeOutcome::NotFound,
            _ => ProbeOutcome::Unknown,
        }
    }
}

/// A probe to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProbe {
    pub op_id: OperationId,
    pub idem_key: String,
    /// The command that ran, as shown (argv joined).
    pub command: String,
    pub outcome: ProbeOutcome,
    pub result_id: Option<String>,
    /// How it ended, in words: "exit 0", "killed by signal 9", "timed out
    /// after 10 s", "not configured".
    pub exit: String,
    /// What it printed, capped; untrusted, sanitised when shown.
    pub output: Option<String>,
    pub operator: String,
    /// RFC 3339, UTC.
    pub probed_at: String,
    pub duration_ms: i64,
}

/// A recorded probe: a row of `settle_probes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub id: i64,
    pub probe: NewProbe,
}
