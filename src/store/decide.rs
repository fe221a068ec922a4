//! Recording a decision, once for every backend: reread the operation at
//! the version the operator saw, judge the contract's rules on the fresh
//! row, then write the decision row (chained to the one before it), the
//! state change and the retry request. Each backend runs [`decide`] inside
//! a transaction of its own ([`DecisionTx`]: its SQL, its locking); what a
//! decision means, what it writes and what it refuses is decided here.

use std::path::Path;

use chrono::{DateTime, SubsecRound, Utc};

use super::chain::{self, Cell};
use crate::domain::rules::{self, Rule};
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, DecisionReceipt, Declarations, OperationDetail,
    OperationId, State, format_time,
};
use crate::error::Error;

/// The id the next decision takes: one past the newest, so the trail's ids
/// follow the chain's order.
pub(crate) const NEXT_DECISION_ID: &str = "SELECT coalesce(max(id), 0) + 1 FROM decisions";

/// The decision row's insert, its values keyed in `mark`'s placeholders
/// (`?1`, `$1`) in this order: id, op id, decision, from and to state,
/// result id, evidence, note, operator, decided at, the operation's
/// version, the decision it undoes, extra attempt, chain hash.
pub(crate) fn insert_decision_sql(mark: char) -> String {
    let values: Vec<String> = (1..=14).map(|i| format!("{mark}{i}")).collect();
    format!(
        "INSERT INTO decisions (id, op_id, decision, from_state, to_state, result_id,
             evidence, note, operator, decided_at, op_version, undoes, extra_attempt,
             chain_hash)
         VALUES ({})",
        values.join(", ")
    )
}

/// What a backend does inside the transaction it holds for a decision, in
/// its own SQL. `Fail` is its failure: settle's verdicts go in through
/// `From<Error>`, next to its driver's own.
pub(crate) trait DecisionTx {
    type Fail: From<Error>;

    /// The operation with its history as it is now, locked against other
    /// writers until the transaction ends (`None`: no such operation).
    fn fresh_detail(&mut self, op: OperationId) -> Result<Option<OperationDetail>, Self::Fail>;

    /// The newest decision's chain hash, where the next one links on
    /// ([`chain::GENESIS`] when there is none, or it has none).
    fn chain_head(&mut self) -> Result<String, Self::Fail>;

    /// The id the next decision takes: one past the newest.
    fn next_decision_id(&mut self) -> Result<i64, Self::Fail>;

    /// Inserts the decision row.
    fn insert_decision(&mut self, row: &DecisionRow) -> Result<(), Self::Fail>;

    /// Sets the operation's state and result id and bumps its version, if it
    /// is still at `change.version`; its new version, or `None` when no row
    /// was at that version.
    fn change_state(&mut self, change: &StateChange) -> Result<Option<i64>, Self::Fail>;

    /// Queues a retry request for the decision; the request's id.
    fn queue_retry(&mut self, row: &DecisionRow, idem_key: &str) -> Result<i64, Self::Fail>;

    /// Cancels the queued request `request`; whether it was still queued.
    fn cancel_retry(&mut self, request: Option<i64>) -> Result<bool, Self::Fail>;
}

/// The decision row as it is written and hashed.
pub(crate) struct DecisionRow<'a> {
    pub id: i64,
    pub op_id: OperationId,
    pub kind: DecisionKind,
    pub from_state: &'a State,
    pub to_state: &'a State,
    pub result_id: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    pub operator: &'a str,
    /// Decided at, to the second: the precision of settle's time text, so a
    /// database that stores an instant reads back the text the hash covers.
    pub decided: DateTime<Utc>,
    /// [`DecisionRow::decided`] as settle's time text.
    pub decided_at: String,
    pub op_version: i64,
    pub undoes: Option<DecisionId>,
    pub extra_attempt: bool,
    /// The link to the decision before it.
    pub chain_hash: String,
}

/// The operation's change a decision makes.
pub(crate) struct StateChange<'a> {
    pub op: OperationId,
    /// The version the operator saw (and the rules judged).
    pub version: i64,
    pub to_state: &'a State,
    pub result_id: Option<String>,
    pub decided: DateTime<Utc>,
    pub decided_at: &'a str,
}

/// A decision a transaction wrote, enough to find it again after the
/// connection broke during COMMIT: its id and its chain hash, which covers
/// every column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub id: i64,
    pub chain_hash: String,
}

/// Records `draft` at `now` inside the backend's transaction: reread,
/// check the version, judge (on the contract merged with what `declared`
/// says of the op type), write. A refusal, a conflict or a missing
/// operation is an [`Error`] (through `Fail`), with nothing written by this
/// call (the backend rolls back its transaction or savepoint).
pub(crate) fn decide<T: DecisionTx>(
    tx: &mut T,
    path: &Path,
    declared: &Declarations,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<(DecisionReceipt, Written), T::Fail> {
    let detail = tx.fresh_detail(draft.op_id)?;
    let detail = found(detail, path, declared, draft)?;
    check_version(draft, &detail)?;
    let judged = judge(draft, &detail, now)?;
    let op = &detail.operation;
    let decided = now.trunc_subsecs(0);
    let id = tx.next_decision_id()?;
    let prev = tx.chain_head()?;
    let mut row = DecisionRow {
        id,
        op_id: op.id,
        kind: draft.kind,
        from_state: &op.state,
        to_state: &judged.to_state,
        result_id: non_empty(&draft.result_id),
        evidence: non_empty(&draft.evidence),
        note: non_empty(&draft.note),
        operator: &draft.operator,
        decided,
        decided_at: format_time(decided),
        op_version: op.version,
        undoes: draft.undoes,
        extra_attempt: judged.extra_attempt,
        chain_hash: String::new(),
    };
    row.chain_hash = chain::link(&prev, &row.cells());
    tx.insert_decision(&row)?;
    let change = StateChange {
        op: op.id,
        version: op.version,
        to_state: &judged.to_state,
        result_id: new_result_id(draft, &detail),
        decided,
        decided_at: &row.decided_at,
    };
    let Some(new_version) = tx.change_state(&change)? else {
        // Unreachable under the backend's lock; refuse rather than guess.
        return Err(Error::VersionConflict {
            op: op.id,
            expected: draft.expected_version,
            found: op.version,
            state: op.state.to_string(),
            last_writer: None,
        }
        .into());
    };
    let retry_request_id = write_retry_request(tx, &row, &detail)?;
    let receipt = DecisionReceipt {
        decision_id: DecisionId(id),
        op_id: op.id,
        kind: draft.kind,
        from_state: op.state.clone(),
        to_state: judged.to_state.clone(),
        new_version,
        retry_request_id,
        extra_attempt: judged.extra_attempt,
    };
    let written = Written {
        id,
        chain_hash: row.chain_hash,
    };
    Ok((receipt, written))
}

/// Queues the retry a `retry_same_key` asks for, or cancels the queued one
/// for `cancel_retry`; the request's id.
fn write_retry_request<T: DecisionTx>(
    tx: &mut T,
    row: &DecisionRow,
    detail: &OperationDetail,
) -> Result<Option<i64>, T::Fail> {
    let op = &detail.operation;
    match row.kind {
        DecisionKind::RetrySameKey => Ok(Some(tx.queue_retry(row, &op.idem_key)?)),
        DecisionKind::CancelRetry => {
            let request = detail.queued_retry().map(|r| r.id);
            if !tx.cancel_retry(request)? {
                return Err(Error::Refused {
                    op: op.id,
                    rule: Rule::RetryStillQueued,
                    reason: "a worker claimed the retry request".to_string(),
                }
                .into());
            }
            Ok(request)
        }
        _ => Ok(None),
    }
}

/// The one answer of a batch of one draft (`draft`), in a ledger `path`
/// names: what deciding it alone answers.
pub(crate) fn only_outcome(
    mut outcomes: Vec<crate::error::Result<DecisionReceipt>>,
    path: &Path,
    draft: &DecisionDraft,
) -> crate::error::Result<DecisionReceipt> {
    outcomes.pop().unwrap_or_else(|| {
        Err(Error::NotFound {
            path: path.to_path_buf(),
            what: draft.op_id.to_string(),
        })
    })
}

/// What [`decide`] would refuse on `detail` (the operation as it is now),
/// writing nothing: for a preview of many rows.
pub(crate) fn judge_only(
    detail: Option<OperationDetail>,
    path: &Path,
    declared: &Declarations,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let detail = found(detail, path, declared, draft)?;
    check_version(draft, &detail)?;
    judge(draft, &detail, now).map(|_| ())
}

/// Whether `e` concerns one row of a batch only (the batch goes on without
/// it), as opposed to the ledger (the batch stops and writes nothing).
pub(crate) fn is_row_outcome(e: &Error) -> bool {
    matches!(
        e,
        Error::Refused { .. } | Error::VersionConflict { .. } | Error::NotFound { .. }
    )
}

/// The operation read for `draft`, with what `declared` says of its type.
fn found(
    detail: Option<OperationDetail>,
    path: &Path,
    declared: &Declarations,
    draft: &DecisionDraft,
) -> Result<OperationDetail, Error> {
    let mut detail = detail.ok_or_else(|| Error::NotFound {
        path: path.to_path_buf(),
        what: draft.op_id.to_string(),
    })?;
    detail.declare(declared);
    Ok(detail)
}

impl DecisionRow<'_> {
    /// The cells the chain hash covers, as SQLite stores them (see
    /// [`chain::Cell`]).
    fn cells(&self) -> [Cell<'_>; 13] {
        [
            Cell::Int(self.id),
            Cell::Int(self.op_id.0),
            Cell::Text(self.kind.as_str().as_bytes()),
            Cell::Text(self.from_state.as_str().as_bytes()),
            Cell::Text(self.to_state.as_str().as_bytes()),
            Cell::from(self.result_id.as_deref()),
            Cell::from(self.evidence.as_deref()),
            Cell::from(self.note.as_deref()),
            Cell::Text(self.operator.as_bytes()),
            Cell::Text(self.decided_at.as_bytes()),
            Cell::Int(self.op_version),
            self.undoes.map_or(Cell::Null, |d| Cell::Int(d.0)),
            Cell::Int(i64::from(self.extra_attempt)),
        ]
    }
}

/// Whether the fresh row is still at the version the operator saw (and
/// readable enough to tell).
pub(crate) fn check_version(draft: &DecisionDraft, detail: &OperationDetail) -> Result<(), Error> {
    let op = &detail.operation;
    // Before the version: a malformed `version` must be named, not
    // reported as a conflict.
    if let Some(bad) = op.malformed_identity() {
        return Err(Error::Refused {
            op: op.id,
            rule: Rule::RowReadable,
            reason: bad.refusal(),
        });
    }
    if op.version != draft.expected_version {
        return Err(Error::VersionConflict {
            op: op.id,
            expected: draft.expected_version,
            found: op.version,
            state: op.state.to_string(),
            last_writer: last_writer(detail),
        });
    }
    Ok(())
}

/// What the contract's rules make of the draft on the fresh row.
pub(crate) struct Judged {
    pub to_state: State,
    pub extra_attempt: bool,
}

/// One judgement of a draft on the fresh row, whichever database.
pub(crate) fn judge(
    draft: &DecisionDraft,
    detail: &OperationDetail,
    now: DateTime<Utc>,
) -> Result<Judged, Error> {
    let op = &detail.operation;
    let checks = rules::check(draft, detail, now);
    if let Some(refused) = rules::refusal(&checks) {
        return Err(Error::Refused {
            op: op.id,
            rule: refused.rule,
            reason: refused.verdict.text().to_string(),
        });
    }
    let Some(to_state) = rules::target_state(draft, detail) else {
        return Err(Error::Refused {
            op: op.id,
            rule: Rule::StateAllows,
            reason: "no state to return to".to_string(),
        });
    };
    Ok(Judged {
        to_state,
        extra_attempt: draft.kind == DecisionKind::RetrySameKey
            && rules::spends_extra_attempt(detail),
    })
}

/// A text an operator left blank (or only spaces) is no text.
pub(crate) fn non_empty(s: &Option<String>) -> Option<String> {
    s.clone().filter(|t| !t.trim().is_empty())
}

/// The operation's result id after the decision.
pub(crate) fn new_result_id(draft: &DecisionDraft, detail: &OperationDetail) -> Option<String> {
    let op = &detail.operation;
    match draft.kind {
        DecisionKind::Applied => non_empty(&draft.result_id).or(op.result_id.clone()),
        // Undoing `applied` takes back the result id it wrote, so the
        // reopened operation does not claim an effect that was never
        // confirmed.
        DecisionKind::Reopen => {
            match detail.decisions.iter().find(|d| Some(d.id) == draft.undoes) {
                Some(d)
                    if d.decision == "applied"
                        && d.result_id.is_some()
                        && d.result_id == op.result_id =>
                {
                    None
                }
                _ => op.result_id.clone(),
            }
        }
        _ => op.result_id.clone(),
    }
}

/// Who wrote the version the operator did not see: the operator of the last
/// decision when that decision made it, otherwise a service or worker.
fn last_writer(detail: &OperationDetail) -> Option<String> {
    let op = &detail.operation;
    match detail.decisions.last() {
        Some(d) if d.op_version + 1 == op.version => Some(format!(
            "{} ({} at {})",
            d.operator, d.decision, d.decided_at
        )),
        _ => Some(format!("a service or worker (updated {})", op.updated_at)),
    }
}
