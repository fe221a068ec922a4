//! Recording and reading drills' verdicts in a SQLite ledger
//! (`settle_drills`, made on first use, append-only by its triggers).

use rusqlite::{TransactionBehavior, params};

use super::conn::Sqlite;
use crate::domain::{DrillVerdict, OpTypeContract};
use crate::error::Result;
use crate::store::backend::Drills;
use crate::store::drills::{INSERT_COLUMNS, TABLE, contract, latest};

/// The table and its guards, made by the first verdict recorded (or
/// copied).
pub(super) const DDL: &str = "
CREATE TABLE IF NOT EXISTS settle_drills (
    id             INTEGER PRIMARY KEY,
    op_type        TEXT NOT NULL,
    run            TEXT NOT NULL,
    drilled_at     TEXT NOT NULL,
    results        TEXT NOT NULL,
    duplicate_case TEXT,
    duplicate_why  TEXT,
    params_ignored INTEGER NOT NULL,
    flaws          TEXT NOT NULL,
    operator       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS settle_drills_op_type ON settle_drills (op_type, id);
CREATE TRIGGER IF NOT EXISTS settle_drills_no_update BEFORE UPDATE ON settle_drills
BEGIN SELECT RAISE(ABORT, 'settle_drills is append-only: a drill verdict is never changed'); END;
CREATE TRIGGER IF NOT EXISTS settle_drills_no_delete BEFORE DELETE ON settle_drills
BEGIN SELECT RAISE(ABORT, 'settle_drills is append-only: a drill verdict is never deleted'); END;
";

impl Drills for Sqlite {
    fn record_drill(&mut self, v: &DrillVerdict) -> Result<i64> {
        self.ensure_writable()?;
        let wait = self.wait;
        let path = self.path.clone();
        let err = |e| super::error::sqlite(&path, "recording a drill verdict", e).busy_after(wait);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute_batch(DDL).map_err(err)?;
        tx.execute(
            &format!(
                "INSERT INTO {TABLE} ({INSERT_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ),
            params![
                v.op_type,
                v.run,
                v.drilled_at,
                v.results,
                v.duplicate_case,
                v.duplicate_why,
                i64::from(v.params_ignored),
                v.flaws,
                v.operator
            ],
        )
        .map_err(err)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(err)?;
        Ok(id)
    }

    fn latest_drill(&self, op_type: &str) -> Result<Option<DrillVerdict>> {
        latest(&mut &self.conn, op_type).map_err(|e| self.err("reading drill verdicts", e))
    }

    fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>> {
        if !self.tables.console {
            return Ok(None);
        }
        contract(&mut &self.conn, op_type).map_err(|e| self.err("reading op_types", e))
    }
}
