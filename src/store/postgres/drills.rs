//! Recording and reading drills' verdicts in a PostgreSQL ledger
//! (`settle_drills`, made on first use, append-only by its triggers).

use postgres::Client;

use super::conn::Pg;
use crate::domain::{DrillVerdict, OpTypeContract};
use crate::error::Result;
use crate::store::backend::Drills;
use crate::store::drills::{INSERT_COLUMNS, TABLE, contract, latest, present, table_ddl};

/// The triggers that keep the table append-only.
const GUARDS: &str = "
CREATE OR REPLACE FUNCTION settle_drills_refuse() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    RAISE EXCEPTION 'settle_drills is append-only: a drill verdict is never changed or deleted';
END $f$;
CREATE TRIGGER settle_drills_no_change BEFORE UPDATE OR DELETE ON settle_drills
    FOR EACH ROW EXECUTE FUNCTION settle_drills_refuse();
CREATE TRIGGER settle_drills_no_truncate BEFORE TRUNCATE ON settle_drills
    FOR EACH STATEMENT EXECUTE FUNCTION settle_drills_refuse();
";

/// The table and its guards, made by the first verdict recorded (or
/// copied).
pub(super) fn ddl() -> String {
    table_ddl("BIGSERIAL", "BIGINT") + GUARDS
}

/// Appends one verdict to the `settle_drills` the session's search path
/// finds first (a ledger's own, or settle's schema beside a job queue's
/// tables), making the table and its guards when it is not there yet;
/// the verdict's id.
pub(crate) fn insert_drill(
    client: &mut Client,
    v: &DrillVerdict,
) -> std::result::Result<i64, postgres::Error> {
    let mut tx = client.transaction()?;
    if !present(&mut &mut tx)? {
        tx.batch_execute(&ddl())?;
    }
    let id: i64 = tx
        .query_one(
            &format!(
                "INSERT INTO {TABLE} ({INSERT_COLUMNS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id"
            ),
            &[
                &v.op_type,
                &v.run,
                &v.drilled_at,
                &v.results,
                &v.duplicate_case,
                &v.duplicate_why,
                &i64::from(v.params_ignored),
                &v.flaws,
                &v.operator,
            ],
        )
        .and_then(|row| row.try_get(0))?;
    tx.commit()?;
    Ok(id)
}

impl Drills for Pg {
    fn record_drill(&mut self, v: &DrillVerdict) -> Result<i64> {
        let shown = self.shown.clone();
        insert_drill(self.client.get_mut(), v)
            .map_err(|e| super::error::pg_error(&shown, "recording a drill verdict", e))
    }

    fn latest_drill(&self, op_type: &str) -> Result<Option<DrillVerdict>> {
        self.fresh()?;
        let mut client = self.client.borrow_mut();
        latest(&mut &mut *client, op_type).map_err(|e| self.err("reading drill verdicts", e))
    }

    fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>> {
        if !self.tables.console {
            return Ok(None);
        }
        self.fresh()?;
        let mut client = self.client.borrow_mut();
        contract(&mut &mut *client, op_type).map_err(|e| self.err("reading op_types", e))
    }
}
