//! The SQLite backend's decisions under the contract: one decision
//! ([`super::one_decision`]), or many at once (every row of the triage queue a
//! filter matches): a batch of drafts in one `BEGIN IMMEDIATE` transaction,
//! each row still reread at the version its operator saw, judged and
//! written by the same steps as one decision, each inside its own savepoint
//! so a refused or conflicted row is skipped without undoing the rest. It
//! never picks the rows: the caller lists them (with their versions) and
//! asks.

use chrono::{DateTime, Utc};
use rusqlite::TransactionBehavior;

use super::conn::Sqlite;
use super::error::sqlite;
use super::one_decision::{decide_in, judge_in, record_one};
use crate::domain::{DecisionDraft, DecisionReceipt};
use crate::error::Result;
use crate::store::backend::Decisions;
use crate::store::decide::is_row_outcome;

impl Decisions for Sqlite {
    fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        record_one(self, draft, now)
    }

    /// In one IMMEDIATE transaction. Any error but a row's own (busy, a
    /// failing SQLite) stops the batch with nothing of it written.
    fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        let wait = self.wait;
        let path = self.path.clone();
        let err = |doing: &str, e: rusqlite::Error| sqlite(&path, doing, e);
        let mut tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| err("starting the batch transaction", e).busy_after(wait))?;
        let mut outcomes = Vec::with_capacity(drafts.len());
        for draft in drafts {
            // A savepoint per row: a rule that refuses after the decision
            // row went in (a worker claimed the retry meanwhile) takes back
            // that row only.
            let row = tx
                .savepoint()
                .map_err(|e| err("starting a row of the batch", e))?;
            match decide_in(&row, (&path, &self.declared), draft, now) {
                Ok(receipt) => {
                    row.commit()
                        .map_err(|e| err("keeping a row of the batch", e))?;
                    outcomes.push(Ok(receipt));
                }
                Err(e) if is_row_outcome(&e) => {
                    // The savepoint's default on finishing is to roll back.
                    row.finish()
                        .map_err(|e| err("taking back a refused row", e))?;
                    outcomes.push(Err(e));
                }
                Err(e) => return Err(e),
            }
        }
        tx.commit()
            .map_err(|e| err("committing the batch", e).busy_after(wait))?;
        Ok(outcomes)
    }

    /// The reread and the judgement of a batch's row, without a
    /// transaction.
    fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        judge_in(
            &self.conn,
            (&self.path, &self.declared),
            draft,
            now,
            self.tables,
        )
    }
}
