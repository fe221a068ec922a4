//! Recording one decision in SQLite, a single draft (a batch's rows
//! each take these steps too, [`super::decisions`]): one `BEGIN IMMEDIATE` transaction, so
//! the version checked is the version changed (no other writer can slip
//! between), in which [`crate::store::decide`] rereads, judges and writes;
//! this file only spells each step in SQLite's SQL.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::chain;
use super::conn::Sqlite;
use super::error::sqlite;
use super::reads::load_detail;
use crate::domain::{DecisionDraft, DecisionReceipt, Declarations, OperationDetail, OperationId};
use crate::error::{Error, Result};
use crate::store::decide::{self, DecisionRow, DecisionTx, StateChange};
use crate::store::tables::Tables;

/// One decision in its own IMMEDIATE transaction: the write lock is taken
/// before the reread.
pub(super) fn record_one(
    db: &mut Sqlite,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<DecisionReceipt> {
    let wait = db.wait;
    let path = db.path.clone();
    let err = |doing: &str, e: rusqlite::Error| sqlite(&path, doing, e);
    let tx = db
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| err("starting the decision transaction", e).busy_after(wait))?;
    let receipt = decide_in(&tx, (&path, &db.declared), draft, now)?;
    tx.commit()
        .map_err(|e| err("committing the decision", e).busy_after(wait))?;
    Ok(receipt)
}

/// One decision inside a transaction the caller holds (one decision, or
/// one row of a batch).
pub(super) fn decide_in(
    tx: &Connection,
    (path, declared): (&Path, &Declarations),
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<DecisionReceipt> {
    let (receipt, _) = decide::decide(&mut Tx { tx, path }, path, declared, draft, now)?;
    Ok(receipt)
}

/// What [`decide_in`] would refuse, without writing: for a preview of many
/// rows. `tables`: which of settle's tables the ledger has (a read-only
/// look at an unadopted one has none).
pub(super) fn judge_in(
    conn: &Connection,
    (path, declared): (&Path, &Declarations),
    draft: &DecisionDraft,
    now: DateTime<Utc>,
    tables: Tables,
) -> Result<()> {
    let detail = load_detail(conn, draft.op_id, tables)
        .map_err(|e| sqlite(path, "reading the operation", e))?;
    decide::judge_only(detail, path, declared, draft, now)
}

/// A decision's transaction on SQLite: the write lock is already held.
struct Tx<'a> {
    tx: &'a Connection,
    path: &'a Path,
}

impl Tx<'_> {
    fn err(&self, doing: &str) -> impl Fn(rusqlite::Error) -> Error + '_ {
        let doing = doing.to_string();
        move |e| sqlite(self.path, &doing, e)
    }
}

impl DecisionTx for Tx<'_> {
    type Fail = Error;

    fn fresh_detail(&mut self, op: OperationId) -> Result<Option<OperationDetail>> {
        load_detail(self.tx, op, Tables::ALL).map_err(self.err("reading the operation"))
    }

    fn chain_head(&mut self) -> Result<String> {
        chain::head(self.tx).map_err(self.err("writing the decision"))
    }

    fn next_decision_id(&mut self) -> Result<i64> {
        self.tx
            .query_row(decide::NEXT_DECISION_ID, [], |r| r.get(0))
            .map_err(self.err("writing the decision"))
    }

    fn insert_decision(&mut self, row: &DecisionRow) -> Result<()> {
        self.tx
            .execute(
                &decide::insert_decision_sql('?'),
                params![
                    row.id,
                    row.op_id.0,
                    row.kind.as_str(),
                    row.from_state.as_str(),
                    row.to_state.as_str(),
                    row.result_id,
                    row.evidence,
                    row.note,
                    row.operator,
                    row.decided_at,
                    row.op_version,
                    row.undoes.map(|d| d.0),
                    i64::from(row.extra_attempt),
                    row.chain_hash,
                ],
            )
            .map_err(self.err("writing the decision"))?;
        Ok(())
    }

    fn change_state(&mut self, change: &StateChange) -> Result<Option<i64>> {
        let changed = self
            .tx
            .execute(
                "UPDATE operations SET state = ?1, result_id = ?2, updated_at = ?3,
                     version = version + 1
                 WHERE id = ?4 AND version = ?5",
                params![
                    change.to_state.as_str(),
                    change.result_id,
                    change.decided_at,
                    change.op.0,
                    change.version
                ],
            )
            .map_err(self.err("changing the operation's state"))?;
        if changed != 1 {
            return Ok(None);
        }
        let version = self
            .tx
            .query_row(
                "SELECT version FROM operations WHERE id = ?1",
                [change.op.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err("reading the new version"))?;
        Ok(Some(version.unwrap_or(change.version + 1)))
    }

    fn queue_retry(&mut self, row: &DecisionRow, idem_key: &str) -> Result<i64> {
        self.tx
            .execute(
                "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by,
                     status, decision_id)
                 VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
                params![row.op_id.0, idem_key, row.decided_at, row.operator, row.id],
            )
            .map_err(self.err("queueing the retry request"))?;
        Ok(self.tx.last_insert_rowid())
    }

    fn cancel_retry(&mut self, request: Option<i64>) -> Result<bool> {
        let cancelled = self
            .tx
            .execute(
                "UPDATE retry_requests SET status = 'cancelled'
                 WHERE id = ?1 AND status = 'queued'",
                [request],
            )
            .map_err(self.err("cancelling the retry request"))?;
        Ok(cancelled == 1)
    }
}
