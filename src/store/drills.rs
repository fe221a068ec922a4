//! The drills' verdicts, `settle_drills`: one append-only row per drill
//! run against an op type's receiver, read back as the latest verdict of
//! the op type so the rules can weigh it. The table is made by the first
//! verdict recorded (each backend's `record_drill`), so a ledger that was
//! never drilled is never changed for it; reads find it absent and say
//! "declared". The statements here are shared; each backend runs them.

use super::rows;
use super::sql::{Arg, Reader};
use crate::domain::{DrillVerdict, OpTypeContract};

pub(super) const TABLE: &str = "settle_drills";

/// The table and its index in `id` and `int`, each backend's words for
/// an id it assigns and a 64-bit integer; each backend adds the triggers
/// that keep it append-only in its own language.
pub(super) fn table_ddl(id: &str, int: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (
    id             {id} PRIMARY KEY,
    op_type        TEXT NOT NULL,
    run            TEXT NOT NULL,
    drilled_at     TEXT NOT NULL,
    results        TEXT NOT NULL,
    duplicate_case TEXT,
    duplicate_why  TEXT,
    params_ignored {int} NOT NULL,
    flaws          TEXT NOT NULL,
    operator       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS settle_drills_op_type ON {TABLE} (op_type, id);
"
    )
}

/// The columns a new verdict is written with, in `record_drill`'s order.
pub(super) const INSERT_COLUMNS: &str = "op_type, run, drilled_at, results, duplicate_case, \
    duplicate_why, params_ignored, flaws, operator";

/// Whether the ledger holds `settle_drills` yet.
pub(super) fn present<R: Reader>(r: &mut R) -> Result<bool, R::Error> {
    let sql = r.dialect().table_count();
    let n = r.row(sql, &[Arg::Text(TABLE.to_string())], &mut |c| {
        c.int(0, "count")
    })?;
    Ok(n.unwrap_or(0) > 0)
}

/// The latest verdict recorded for `op_type`, if any.
pub(super) fn latest<R: Reader>(
    r: &mut R,
    op_type: &str,
) -> Result<Option<DrillVerdict>, R::Error> {
    if !present(r)? {
        return Ok(None);
    }
    let p = r.dialect().param_prefix();
    let sql = format!(
        "SELECT id, {INSERT_COLUMNS} FROM {TABLE} WHERE op_type = {p}1 ORDER BY id DESC LIMIT 1"
    );
    r.row(&sql, &[Arg::Text(op_type.to_string())], &mut |c| {
        Ok(DrillVerdict {
            id: c.int(0, "id")?,
            op_type: c.text(1, "op_type")?,
            run: c.text(2, "run")?,
            drilled_at: c.text(3, "drilled_at")?,
            results: c.text(4, "results")?,
            duplicate_case: c.opt_text(5, "duplicate_case")?,
            duplicate_why: c.opt_text(6, "duplicate_why")?,
            params_ignored: c.int(7, "params_ignored")? != 0,
            flaws: c.text(8, "flaws")?,
            operator: c.text(9, "operator")?,
        })
    })
}

/// The `op_types` row of `op_type`: the contract a drill holds the
/// receiver to.
pub(super) fn contract<R: Reader>(
    r: &mut R,
    op_type: &str,
) -> Result<Option<OpTypeContract>, R::Error> {
    let p = r.dialect().param_prefix();
    let sql = format!(
        "SELECT op_type, idempotent, key_retention_s, description FROM op_types
         WHERE op_type = {p}1"
    );
    let row = r.row(&sql, &[Arg::Text(op_type.to_string())], &mut |c| {
        rows::contract(c)
    })?;
    Ok(row.map(|(contract, _)| contract))
}
