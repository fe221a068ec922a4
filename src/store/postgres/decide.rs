//! Writes to a PostgreSQL ledger: decisions (one transaction, the version
//! checked under a row lock, the rules judged on the fresh row, serialization
//! failures retried a bounded number of times), imports, and the audit
//! chain's verification.

use chrono::{DateTime, Utc};

use super::Pg;
use crate::domain::{DecisionDraft, DecisionReceipt, NewOperation, OpTypeContract};
use crate::error::Result;
use crate::store::{ChainVerdict, ImportReport};

impl Pg {
    pub fn record_decision(
        &mut self,
        _draft: &DecisionDraft,
        _now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        self.ensure_writable()?;
        Err(self.not_yet("deciding"))
    }

    pub fn record_decisions(
        &mut self,
        _drafts: &[DecisionDraft],
        _now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        self.ensure_writable()?;
        Err(self.not_yet("deciding"))
    }

    pub fn judge_decision(&self, _draft: &DecisionDraft, _now: DateTime<Utc>) -> Result<()> {
        Err(self.not_yet("judging a decision"))
    }

    pub fn import(
        &mut self,
        _operations: &[NewOperation],
        _contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        self.ensure_writable()?;
        Err(self.not_yet("importing"))
    }

    pub fn verify_chain(&self) -> Result<ChainVerdict> {
        Err(self.not_yet("verifying the audit trail"))
    }
}
