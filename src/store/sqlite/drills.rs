//! Recording and reading drills' verdicts in a SQLite ledger
//! (`settle_drills`, made on first use, append-only by its triggers).

use rusqlite::{TransactionBehavior, params};

use super::conn::Sqlite;
use crate::domain::{DrillVerdict, OpTypeContract};
use crate::error::Result;
use crate::store::backend::Drills;
use crate::store::drills::{INSERT_COLUMNS, TABLE, contract, latest, table_ddl};

/// The triggers that keep the table append-only.
const GUARDS: &str = "
CREATE TRIGGER IF NOT EXISTS settle_drills_no_update BEFORE UPDATE ON settle_drills
BEGIN SELECT RAISE(ABORT, 'settle_drills is append-only: a drill verdict is never changed'); END;
CREATE TRIGGER IF NOT EXISTS settle_drills_no_delete BEFORE DELETE ON settle_drills
BEGIN SELECT RAISE(ABORT, 'settle_drills is append-only: a drill verdict is never deleted'); END;
";

/// The table and its guards, made by the first verdict recorded (or
/// copied).
pub(super) fn ddl() -> String {
    table_ddl("INTEGER", "INTEGER") + GUARDS
}

impl Drills for Sqlite {
    fn record_drill(&mut self, v: &DrillVerdict) -> Result<i64> {
        let wait = self.wait;
        let path = self.path.clone();
        let err = |e| super::error::sqlite(&path, "recording a drill verdict", e).busy_after(wait);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        tx.execute_batch(&ddl()).map_err(err)?;
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
