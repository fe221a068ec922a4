//! Recording a decision: one `BEGIN IMMEDIATE` transaction that rereads the
//! operation, checks the version the operator saw, judges the contract's rules
//! on what it is about to change, and writes the decision row (chained to the
//! one before it), the state change and the retry request together, or
//! nothing at all.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::chain::{self, Cell};
use super::conn::Sqlite;
use super::read::load_detail;
use crate::domain::rules::{self, Rule};
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, DecisionReceipt, OperationDetail, State, format_time,
};
use crate::error::{Error, Result};
use crate::store::tables::Tables;

impl Sqlite {
    /// Records `draft` at `now`, or refuses it with [`Error::Refused`] (a rule
    /// of the contract), [`Error::VersionConflict`] (someone else wrote the
    /// operation since the operator looked) or [`Error::Busy`] (another
    /// process held the write lock past the busy timeout). A refusal writes
    /// nothing.
    pub fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        self.ensure_writable()?;
        let wait = self.wait;
        let path = self.path.clone();
        let err = |doing: &str, e: rusqlite::Error| super::error::sqlite(&path, doing, e);
        // IMMEDIATE takes the write lock before we read, so the version we
        // check is the version we change: no other writer can slip between.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the decision transaction", e).busy_after(wait))?;
        let receipt = decide_in(&tx, &path, draft, now)?;
        tx.commit()
            .map_err(|e| err("committing the decision", e).busy_after(wait))?;
        Ok(receipt)
    }
}

/// The three steps of a decision inside a transaction the caller holds
/// (one decision, or one row of a batch): reread at the version the
/// operator saw, judge the rules on the fresh row, write.
pub(super) fn decide_in(
    tx: &Connection,
    path: &Path,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<DecisionReceipt> {
    let detail = reread(tx, path, draft, Tables::ALL)?;
    let judged = judge(draft, &detail, now)?;
    Writer {
        tx,
        path,
        draft,
        detail: &detail,
        decided_at: format_time(now),
    }
    .write(judged)
}

/// What [`decide_in`] would refuse, without writing: the same reread and
/// judgement, for a preview of many rows. `tables`: which of settle's
/// tables the ledger has (a read-only look at an unadopted one has none).
pub(super) fn judge_in(
    conn: &Connection,
    path: &Path,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
    tables: Tables,
) -> Result<()> {
    let detail = reread(conn, path, draft, tables)?;
    judge(draft, &detail, now).map(|_| ())
}

/// The operation as it is now, under the write lock, if it is still at the
/// version the operator saw.
fn reread(
    tx: &Connection,
    path: &Path,
    draft: &DecisionDraft,
    tables: Tables,
) -> Result<OperationDetail> {
    let detail = load_detail(tx, draft.op_id, tables)
        .map_err(|e| super::error::sqlite(path, "reading the operation", e))?
        .ok_or_else(|| Error::NotFound {
            path: path.to_path_buf(),
            what: draft.op_id.to_string(),
        })?;
    check_version(draft, &detail)?;
    Ok(detail)
}

/// Whether the fresh row is still at the version the operator saw (and
/// readable enough to tell). Shared with the PostgreSQL backend.
pub(crate) fn check_version(draft: &DecisionDraft, detail: &OperationDetail) -> Result<()> {
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
    pub(crate) to_state: State,
    pub(crate) extra_attempt: bool,
}

/// Shared with the PostgreSQL backend: one judgement, whichever database.
pub(crate) fn judge(
    draft: &DecisionDraft,
    detail: &OperationDetail,
    now: DateTime<Utc>,
) -> Result<Judged> {
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

/// Writes one judged decision inside the transaction: the decision row
/// (chained to the one before it), the state change, the retry request.
struct Writer<'a> {
    tx: &'a Connection,
    path: &'a Path,
    draft: &'a DecisionDraft,
    detail: &'a OperationDetail,
    decided_at: String,
}

pub(crate) fn non_empty(s: &Option<String>) -> Option<String> {
    s.clone().filter(|t| !t.trim().is_empty())
}

impl Writer<'_> {
    fn err(&self, doing: &str, e: rusqlite::Error) -> Error {
        super::error::sqlite(self.path, doing, e)
    }

    fn write(&self, judged: Judged) -> Result<DecisionReceipt> {
        let op = &self.detail.operation;
        let decision_id = self.insert_decision(&judged)?;
        self.change_state(&judged.to_state)?;
        let retry_request_id = self.write_retry_request(decision_id)?;
        let new_version = self
            .tx
            .query_row(
                "SELECT version FROM operations WHERE id = ?1",
                [op.id.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err("reading the new version", e))?
            .unwrap_or(op.version + 1);
        Ok(DecisionReceipt {
            decision_id,
            op_id: op.id,
            kind: self.draft.kind,
            from_state: op.state.clone(),
            to_state: judged.to_state,
            new_version,
            retry_request_id,
            extra_attempt: judged.extra_attempt,
        })
    }

    /// The decision row, with its id chosen here (the next after the
    /// newest) so that its chain hash, which covers the id, goes in with
    /// the row: the append-only triggers allow no later update.
    fn insert_decision(&self, judged: &Judged) -> Result<DecisionId> {
        let (draft, op) = (self.draft, &self.detail.operation);
        let err = |e| self.err("writing the decision", e);
        let id: i64 = self
            .tx
            .query_row("SELECT coalesce(max(id), 0) + 1 FROM decisions", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        let prev = chain::head(self.tx).map_err(err)?;
        let (result_id, evidence, note) = (
            non_empty(&draft.result_id),
            non_empty(&draft.evidence),
            non_empty(&draft.note),
        );
        let cells = [
            Cell::Int(id),
            Cell::Int(op.id.0),
            Cell::Text(draft.kind.as_str().as_bytes()),
            Cell::Text(op.state.as_str().as_bytes()),
            Cell::Text(judged.to_state.as_str().as_bytes()),
            Cell::from(result_id.as_deref()),
            Cell::from(evidence.as_deref()),
            Cell::from(note.as_deref()),
            Cell::Text(draft.operator.as_bytes()),
            Cell::Text(self.decided_at.as_bytes()),
            Cell::Int(op.version),
            draft.undoes.map_or(Cell::Null, |d| Cell::Int(d.0)),
            Cell::Int(i64::from(judged.extra_attempt)),
        ];
        self.tx
            .execute(
                "INSERT INTO decisions (id, op_id, decision, from_state, to_state, result_id,
                     evidence, note, operator, decided_at, op_version, undoes, extra_attempt,
                     chain_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    id,
                    op.id.0,
                    draft.kind.as_str(),
                    op.state.as_str(),
                    judged.to_state.as_str(),
                    result_id,
                    evidence,
                    note,
                    draft.operator,
                    self.decided_at,
                    op.version,
                    draft.undoes.map(|d| d.0),
                    i64::from(judged.extra_attempt),
                    chain::link(&prev, &cells),
                ],
            )
            .map_err(err)?;
        Ok(DecisionId(id))
    }

    /// The operation's new state and result id, guarded by its version.
    fn change_state(&self, to_state: &State) -> Result<()> {
        let (draft, op) = (self.draft, &self.detail.operation);
        let new_result = new_result_id(draft, self.detail);
        let changed = self
            .tx
            .execute(
                "UPDATE operations SET state = ?1, result_id = ?2, updated_at = ?3,
                     version = version + 1
                 WHERE id = ?4 AND version = ?5",
                params![
                    to_state.as_str(),
                    new_result,
                    self.decided_at,
                    op.id.0,
                    op.version
                ],
            )
            .map_err(|e| self.err("changing the operation's state", e))?;
        if changed != 1 {
            // Unreachable under the write lock; refuse rather than guess.
            return Err(Error::VersionConflict {
                op: op.id,
                expected: draft.expected_version,
                found: op.version,
                state: op.state.to_string(),
                last_writer: None,
            });
        }
        Ok(())
    }

    /// Queues the retry a `retry_same_key` asks for, or cancels the queued
    /// one for `cancel_retry`; the request's id.
    fn write_retry_request(&self, decision_id: DecisionId) -> Result<Option<i64>> {
        let (draft, op) = (self.draft, &self.detail.operation);
        match draft.kind {
            DecisionKind::RetrySameKey => {
                self.tx
                    .execute(
                        "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by,
                             status, decision_id)
                         VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
                        params![
                            op.id.0,
                            op.idem_key,
                            self.decided_at,
                            draft.operator,
                            decision_id.0
                        ],
                    )
                    .map_err(|e| self.err("queueing the retry request", e))?;
                Ok(Some(self.tx.last_insert_rowid()))
            }
            DecisionKind::CancelRetry => {
                let request = self.detail.queued_retry().map(|r| r.id);
                let cancelled = self
                    .tx
                    .execute(
                        "UPDATE retry_requests SET status = 'cancelled'
                         WHERE id = ?1 AND status = 'queued'",
                        [request],
                    )
                    .map_err(|e| self.err("cancelling the retry request", e))?;
                if cancelled != 1 {
                    return Err(Error::Refused {
                        op: op.id,
                        rule: Rule::RetryStillQueued,
                        reason: "a worker claimed the retry request".to_string(),
                    });
                }
                Ok(request)
            }
            _ => Ok(None),
        }
    }
}

/// The operation's result id after the decision. Shared with the
/// PostgreSQL backend.
pub(crate) fn new_result_id(draft: &DecisionDraft, detail: &OperationDetail) -> Option<String> {
    let op = &detail.operation;
    match draft.kind {
        DecisionKind::Applied => non_empty(&draft.result_id).or(op.result_id.clone()),
        // Undoing `applied` takes back the result id it wrote, so the
        // reopened operation does not claim an effect (issue 9, point 11).
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
