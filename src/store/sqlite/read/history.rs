//! One operation's whole history (attempts, events, decisions, retry
//! requests, its type's contract) and the audit trail, read row by row so a
//! malformed cell is flagged, never fatal. Reads only.

use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

use super::cells::Cells;
use super::seek_plan;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, Malformed, OpTypeContract, Operation, OperationDetail,
    OperationId, Probe, RetryRequest, Seek,
};
use crate::error::{Error, Result};
use crate::store::rows::{self, flagged};
use crate::store::sqlite::Sqlite;
use crate::store::tables::Tables;

const OPERATION_COLUMNS: &str = "id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, CAST(lease_expires_at AS TEXT), key_expires_at, created_at,
    updated_at, version";

const DECISION_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, evidence,
    note, operator, decided_at, op_version, undoes";

impl Sqlite {
    /// The operation with its attempts, events, decisions, retry requests and
    /// its type's contract.
    pub fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        load_detail(&self.conn, id, self.tables)
            .map_err(|e| self.err(&format!("reading operation {id}"), e))?
            .ok_or_else(|| Error::NotFound {
                path: self.path.clone(),
                what: id.to_string(),
            })
    }

    /// How many decisions lie beyond `seek` in the trail's order (newest
    /// first): what a limit left out. One indexed count on the primary key.
    pub fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        if !self.tables.console {
            return Ok(0);
        }
        let (_, _, bound) = seek_plan(seek, true);
        let n: i64 = match bound {
            Some((id, condition)) => self.conn.query_row(
                &format!("SELECT COUNT(*) FROM decisions WHERE id {condition} ?1"),
                [id.0],
                |r| r.get(0),
            ),
            None => self
                .conn
                .query_row("SELECT COUNT(*) FROM decisions", [], |r| r.get(0)),
        }
        .map_err(|e| self.err("counting the audit trail", e))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// One page of decisions, newest first, for `settle audit` and the
    /// console's Audit view.
    pub fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        if !self.tables.console {
            return Ok(Vec::new());
        }
        let (order, reverse, bound) = seek_plan(seek, true);
        let (sql, args) = match bound {
            Some((id, condition)) => (
                // Newest first: `condition` is `<` after an id, `>` before.
                format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE id {condition} ?1 ORDER BY id {order} LIMIT ?2"
                ),
                vec![id.0, limit.min(i64::MAX as usize) as i64],
            ),
            None => (
                format!("SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id {order} LIMIT ?1"),
                vec![limit.min(i64::MAX as usize) as i64],
            ),
        };
        let mut rows = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params_from_iter(args), |r| decision(r).map(|(d, _)| d))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.err("reading the audit trail", e))?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }
}

/// Reads one operation's whole history. Shared by [`Sqlite::detail`] and the
/// decision transaction, which must judge the rules on what it is about to
/// change.
pub(crate) fn load_detail(
    conn: &Connection,
    id: OperationId,
    tables: Tables,
) -> rusqlite::Result<Option<OperationDetail>> {
    let Some(operation) = conn
        .prepare_cached(&format!(
            "SELECT {OPERATION_COLUMNS} FROM operations WHERE id = ?1"
        ))?
        .query_row([id.0], operation)
        .optional()?
    else {
        return Ok(None);
    };
    let attempts = conn
        .prepare_cached(
            "SELECT op_id, attempt, started_at, ended_at, outcome, error, response
             FROM attempts WHERE op_id = ?1 ORDER BY attempt",
        )?
        .query_map([id.0], attempt)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut history_malformed = Vec::new();
    let attempts = flagged(attempts, &mut history_malformed, |a| {
        format!("attempt {}", a.attempt)
    });
    let events = conn
        .prepare_cached(
            "SELECT id, op_id, attempt, at, event, detail FROM events WHERE op_id = ?1 ORDER BY id",
        )?
        .query_map([id.0], event)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let events = flagged(events, &mut history_malformed, |e| {
        format!("event {}", e.id)
    });
    // Schema 5's probes and worker columns; a read-only look at an older
    // ledger has neither.
    let worker_columns = tables.console && tables.worker;
    let (decisions, retry_requests, contract) = if tables.console {
        let decisions = conn
            .prepare_cached(&format!(
                "SELECT {DECISION_COLUMNS} FROM decisions WHERE op_id = ?1 ORDER BY id"
            ))?
            .query_map([id.0], decision)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let decisions = flagged(decisions, &mut history_malformed, |d| {
            format!("decision {}", d.id)
        });
        let retry_requests = conn
            .prepare_cached(if worker_columns {
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                    claimed_by, claim_expires_at, runs, finished_at, outcome
                 FROM retry_requests WHERE op_id = ?1 ORDER BY id"
            } else {
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                    NULL, NULL, 0, NULL, NULL
                 FROM retry_requests WHERE op_id = ?1 ORDER BY id"
            })?
            .query_map([id.0], retry_request)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let retry_requests = flagged(retry_requests, &mut history_malformed, |r| {
            format!("retry request {}", r.id)
        });
        let contract = conn
            .prepare_cached(
                "SELECT op_type, idempotent, key_retention_s, description FROM op_types WHERE op_type = ?1",
            )?
            .query_row([&operation.op_type], contract)
            .optional()?
            .map(|one| flagged(vec![one], &mut history_malformed, |_| "op_types row".into()));
        let contract = contract.and_then(|mut one| one.pop());
        (decisions, retry_requests, contract)
    } else {
        (Vec::new(), Vec::new(), None)
    };
    let probes = if worker_columns {
        let probes = conn
            .prepare_cached(
                "SELECT id, op_id, idem_key, command, outcome, result_id, exit, output,
                    operator, probed_at, duration_ms
                 FROM settle_probes WHERE op_id = ?1 ORDER BY id",
            )?
            .query_map([id.0], probe)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        flagged(probes, &mut history_malformed, |p| {
            format!("probe {}", p.id)
        })
    } else {
        Vec::new()
    };
    Ok(Some(OperationDetail {
        operation,
        attempts,
        events,
        decisions,
        retry_requests,
        probes,
        contract,
        history_malformed,
    }))
}

fn operation(r: &Row<'_>) -> rusqlite::Result<Operation> {
    rows::operation(&mut Cells::new(r))
}

// The history rows below are read as tolerantly; their malformed cells are
// gathered on the detail by [`flagged`] (see `history_malformed`).

fn attempt(r: &Row<'_>) -> rusqlite::Result<(Attempt, Vec<Malformed>)> {
    rows::attempt(&mut Cells::new(r))
}

fn event(r: &Row<'_>) -> rusqlite::Result<(Event, Vec<Malformed>)> {
    rows::event(&mut Cells::new(r))
}

fn decision(r: &Row<'_>) -> rusqlite::Result<(Decision, Vec<Malformed>)> {
    rows::decision(&mut Cells::new(r))
}

fn retry_request(r: &Row<'_>) -> rusqlite::Result<(RetryRequest, Vec<Malformed>)> {
    rows::retry_request(&mut Cells::new(r))
}

fn probe(r: &Row<'_>) -> rusqlite::Result<(Probe, Vec<Malformed>)> {
    rows::probe(&mut Cells::new(r))
}

fn contract(r: &Row<'_>) -> rusqlite::Result<(OpTypeContract, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = OpTypeContract {
        op_type: c.text(0, "op_type")?,
        idempotent: c.int(1, "idempotent")? == 1,
        key_retention_s: c.opt_int(2, "key_retention_s")?,
        description: c.opt_text(3, "description")?,
    };
    Ok((row, c.malformed))
}
