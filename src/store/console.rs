//! Reads only the console needs: audit pages in both directions, so its
//! audit view can keep a bounded window of a long trail like the operation
//! lists do. SQL stays in `store`.

use rusqlite::params;

use super::Ledger;
use super::read::{DECISION_COLUMNS, decision};
use crate::domain::{Decision, DecisionId};
use crate::error::Result;

/// Where an audit page starts. Newest first, like [`super::Seek`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditSeek {
    First,
    /// Older than this decision.
    After(DecisionId),
    /// Newer than this decision, returned newest first.
    Before(DecisionId),
    Last,
}

impl Ledger {
    /// One page of decisions, newest first.
    pub fn audit_page(&self, seek: AuditSeek, limit: usize) -> Result<Vec<Decision>> {
        if !self.console_tables {
            return Ok(Vec::new());
        }
        let (condition, order, bound, reverse) = match seek {
            AuditSeek::First => ("id < ?1", "DESC", i64::MAX, false),
            AuditSeek::After(id) => ("id < ?1", "DESC", id.0, false),
            AuditSeek::Before(id) => ("id > ?1", "ASC", id.0, true),
            AuditSeek::Last => ("id > ?1", "ASC", i64::MIN, true),
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {DECISION_COLUMNS} FROM decisions WHERE {condition} ORDER BY id {order} LIMIT ?2"
            ))
            .map_err(|e| self.err("reading the audit trail", e))?;
        let mut rows = stmt
            .query_map(
                params![bound, limit.min(i64::MAX as usize) as i64],
                decision,
            )
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err("reading the audit trail", e))?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }
}
