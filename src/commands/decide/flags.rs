//! The decision `settle decide`'s flags describe, shared by the one-row
//! command and the batch over a filter.

use crate::cli::DecideArgs;
use crate::domain::{DecisionDraft, DecisionKind, OperationId};

/// The kind the flags name; clap's group makes exactly one of them present.
pub(super) fn kind(args: &DecideArgs) -> DecisionKind {
    if args.applied {
        DecisionKind::Applied
    } else if args.not_applied {
        DecisionKind::NotApplied
    } else if args.retry_same_key {
        DecisionKind::RetrySameKey
    } else if args.cancel_retry {
        DecisionKind::CancelRetry
    } else {
        DecisionKind::Reopen
    }
}

/// The decision the flags describe, for `op`: what `--result-id`,
/// `--evidence`, `--note` and `--override` say. The version it is guarded
/// by and what it undoes are the caller's to set.
pub(super) fn draft(
    args: &DecideArgs,
    kind: DecisionKind,
    op: OperationId,
    operator: String,
) -> DecisionDraft {
    DecisionDraft {
        op_id: op,
        kind,
        result_id: args.result_id.clone(),
        evidence: args.evidence.clone(),
        note: args.note.clone(),
        override_committed: args.override_committed,
        operator,
        expected_version: 0,
        undoes: None,
    }
}
