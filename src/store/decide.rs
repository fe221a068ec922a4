//! Recording a decision: one `BEGIN IMMEDIATE` transaction that rereads the
//! operation, checks the version the operator saw, judges the contract's rules
//! on what it is about to change, and writes the decision row, the state
//! change and the retry request together, or nothing at all.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::Ledger;
use super::read::load_detail;
use crate::domain::rules::{self, Rule};
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, DecisionReceipt, OperationDetail, format_time,
};
use crate::error::{Error, Result};

impl Ledger {
    /// Records `draft` at `now`, or refuses it with [`Error::Refused`] (a rule
    /// of the contract) or [`Error::VersionConflict`] (someone else wrote the
    /// operation since the operator looked). A refusal writes nothing.
    pub fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        self.ensure_writable()?;
        let path = self.path.clone();
        let err = |doing: &str, e: rusqlite::Error| super::sqlite(&path, doing, e);
        // IMMEDIATE takes the write lock before we read, so the version we
        // check is the version we change: no other writer can slip between.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the decision transaction", e))?;
        let detail = load_detail(&tx, draft.op_id, true)
            .map_err(|e| err("reading the operation", e))?
            .ok_or_else(|| Error::NotFound {
                path: path.clone(),
                what: draft.op_id.to_string(),
            })?;
        let op = &detail.operation;
        if op.version != draft.expected_version {
            return Err(Error::VersionConflict {
                op: op.id,
                expected: draft.expected_version,
                found: op.version,
                state: op.state.to_string(),
                last_writer: last_writer(&detail),
            });
        }
        let checks = rules::check(draft, &detail, now);
        if let Some(refused) = rules::refusal(&checks) {
            return Err(Error::Refused {
                op: op.id,
                rule: refused.rule,
                reason: refused.verdict.text().to_string(),
            });
        }
        let Some(to_state) = rules::target_state(draft, &detail) else {
            return Err(Error::Refused {
                op: op.id,
                rule: Rule::StateAllows,
                reason: "no state to return to".to_string(),
            });
        };
        let extra_attempt =
            draft.kind == DecisionKind::RetrySameKey && rules::spends_extra_attempt(&detail);
        let decided_at = format_time(now);
        let non_empty = |s: &Option<String>| s.clone().filter(|t| !t.trim().is_empty());
        tx.execute(
            "INSERT INTO decisions (op_id, decision, from_state, to_state, result_id, evidence,
                 note, operator, decided_at, op_version, undoes, extra_attempt)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                op.id.0,
                draft.kind.as_str(),
                op.state.as_str(),
                to_state.as_str(),
                non_empty(&draft.result_id),
                non_empty(&draft.evidence),
                non_empty(&draft.note),
                draft.operator,
                decided_at,
                op.version,
                draft.undoes.map(|d| d.0),
                extra_attempt,
            ],
        )
        .map_err(|e| err("writing the decision", e))?;
        let decision_id = DecisionId(tx.last_insert_rowid());
        let new_result = match draft.kind {
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
        };
        let changed = tx
            .execute(
                "UPDATE operations SET state = ?1, result_id = ?2, updated_at = ?3,
                     version = version + 1
                 WHERE id = ?4 AND version = ?5",
                params![
                    to_state.as_str(),
                    new_result,
                    decided_at,
                    op.id.0,
                    op.version
                ],
            )
            .map_err(|e| err("changing the operation's state", e))?;
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
        let retry_request_id = match draft.kind {
            DecisionKind::RetrySameKey => {
                tx.execute(
                    "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by,
                         status, decision_id)
                     VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
                    params![
                        op.id.0,
                        op.idem_key,
                        decided_at,
                        draft.operator,
                        decision_id.0
                    ],
                )
                .map_err(|e| err("queueing the retry request", e))?;
                Some(tx.last_insert_rowid())
            }
            DecisionKind::CancelRetry => {
                let request = detail.queued_retry().map(|r| r.id);
                let cancelled = tx
                    .execute(
                        "UPDATE retry_requests SET status = 'cancelled'
                         WHERE id = ?1 AND status = 'queued'",
                        [request],
                    )
                    .map_err(|e| err("cancelling the retry request", e))?;
                if cancelled != 1 {
                    return Err(Error::Refused {
                        op: op.id,
                        rule: Rule::RetryStillQueued,
                        reason: "a worker claimed the retry request".to_string(),
                    });
                }
                request
            }
            _ => None,
        };
        let new_version = tx
            .query_row(
                "SELECT version FROM operations WHERE id = ?1",
                [op.id.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| err("reading the new version", e))?
            .unwrap_or(op.version + 1);
        tx.commit().map_err(|e| err("committing the decision", e))?;
        Ok(DecisionReceipt {
            decision_id,
            op_id: op.id,
            kind: draft.kind,
            from_state: op.state.clone(),
            to_state,
            new_version,
            retry_request_id,
            extra_attempt,
        })
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
