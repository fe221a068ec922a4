//! An operator's decision: its kinds, the row it leaves in `decisions`,
//! what the operator asks for and what a written decision reports.

use std::fmt;

use super::ids::{DecisionId, OperationId};
use super::state::State;

/// The kinds of operator decision (`decisions.decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    Applied,
    NotApplied,
    RetrySameKey,
    CancelRetry,
    Reopen,
}

impl DecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Applied => "applied",
            DecisionKind::NotApplied => "not_applied",
            DecisionKind::RetrySameKey => "retry_same_key",
            DecisionKind::CancelRetry => "cancel_retry",
            DecisionKind::Reopen => "reopen",
        }
    }

    pub fn parse(word: &str) -> Option<DecisionKind> {
        Some(match word {
            "applied" => DecisionKind::Applied,
            "not_applied" => DecisionKind::NotApplied,
            "retry_same_key" => DecisionKind::RetrySameKey,
            "cancel_retry" => DecisionKind::CancelRetry,
            "reopen" => DecisionKind::Reopen,
            _ => return None,
        })
    }
}

impl fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recorded decision: a row of `decisions`. `decision` is kept as a string
/// because the audit trail may hold words written by a newer console.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub id: DecisionId,
    pub op_id: OperationId,
    pub decision: String,
    pub from_state: String,
    pub to_state: String,
    pub result_id: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    pub operator: String,
    pub decided_at: String,
    pub op_version: i64,
    pub undoes: Option<DecisionId>,
}

/// What an operator asks the ledger to record. Built by the CLI or the
/// console, validated against fresh data inside the write transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionDraft {
    pub op_id: OperationId,
    pub kind: DecisionKind,
    pub result_id: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    /// Record `not_applied` although a `committed` event exists. Needs a note.
    pub override_committed: bool,
    pub operator: String,
    /// The operation version the operator saw; the write happens only if the
    /// ledger still has it (compare-and-set).
    pub expected_version: i64,
    /// For `reopen`: the decision being undone.
    pub undoes: Option<DecisionId>,
}

/// What a successful decision wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionReceipt {
    pub decision_id: DecisionId,
    pub op_id: OperationId,
    pub kind: DecisionKind,
    pub from_state: State,
    pub to_state: State,
    pub new_version: i64,
    pub retry_request_id: Option<i64>,
    /// For `retry_same_key` on an `exhausted` operation: the attempt beyond
    /// `max_attempts` this retry spends.
    pub extra_attempt: bool,
}
