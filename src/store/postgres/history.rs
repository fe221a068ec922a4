//! One operation's whole history (attempts, events, decisions, retry
//! requests, its type's contract) and the audit trail on PostgreSQL, read
//! row by row so a malformed cell is flagged, never fatal, and returned
//! exactly as [`crate::store::sqlite`] returns them. Reads only; the
//! decision transaction reuses [`load_detail`] on its own transaction.

use postgres::{GenericClient, Row};

use super::cells::Cells;
use super::conn::Pg;
use super::read::seek_plan;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, Malformed, OpTypeContract, Operation, OperationDetail,
    OperationId, Probe, RetryRequest, Seek,
};
use crate::error::{Error, Result};
use crate::store::rows::{self, flagged};

type PgResult<T> = std::result::Result<T, postgres::Error>;

const OPERATION_COLUMNS: &str = "id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, lease_expires_at, key_expires_at, created_at,
    updated_at, version";

const DECISION_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, evidence,
    note, operator, decided_at, op_version, undoes";

impl Pg {
    /// The operation with its attempts, events, decisions, retry requests and
    /// its type's contract.
    pub fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        self.fresh()?;
        let doing = format!("reading operation {id}");
        let mut client = self.client.borrow_mut();
        load_detail(&mut *client, id, self.tables)
            .map_err(|e| self.err(&doing, e))?
            .ok_or_else(|| Error::NotFound {
                path: self.shown.clone(),
                what: id.to_string(),
            })
    }

    /// How many decisions lie beyond `seek` in the trail's order (newest
    /// first): what a limit left out. One count on the primary key.
    pub fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        self.fresh()?;
        let failed = |e| self.err("counting the audit trail", e);
        if !self.tables.console {
            return Ok(0);
        }
        let mut client = self.client.borrow_mut();
        let (_, _, bound) = seek_plan(seek, true);
        let n: i64 = match bound {
            Some((id, condition)) => client.query_one(
                &format!("SELECT count(*) FROM decisions WHERE id {condition} $1"),
                &[&id.0],
            ),
            None => client.query_one("SELECT count(*) FROM decisions", &[]),
        }
        .and_then(|r| r.try_get(0))
        .map_err(failed)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// One page of decisions, newest first, for `settle audit` and the
    /// console's Audit view.
    pub fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        self.fresh()?;
        let failed = |e| self.err("reading the audit trail", e);
        if !self.tables.console {
            return Ok(Vec::new());
        }
        let mut client = self.client.borrow_mut();
        let (order, reverse, bound) = seek_plan(seek, true);
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = match bound {
            // Newest first: `condition` is `<` after an id, `>` before.
            Some((id, condition)) => client.query(
                &format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE id {condition} $1 ORDER BY id {order} LIMIT $2"
                ),
                &[&id.0, &limit],
            ),
            None => client.query(
                &format!("SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id {order} LIMIT $1"),
                &[&limit],
            ),
        }
        .map_err(failed)?;
        let mut rows = rows
            .iter()
            .map(|r| decision(r).map(|(d, _)| d))
            .collect::<PgResult<Vec<_>>>()
            .map_err(failed)?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }
}

/// Reads one operation's whole history, on a plain connection or inside a
/// transaction: the decision transaction must judge the rules on what it is
/// about to change.
pub(crate) fn load_detail(
    client: &mut impl GenericClient,
    id: OperationId,
    tables: crate::store::tables::Tables,
) -> PgResult<Option<OperationDetail>> {
    let Some(row) = client.query_opt(
        &format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE id = $1"),
        &[&id.0],
    )?
    else {
        return Ok(None);
    };
    let operation = operation(&row)?;
    let mut history_malformed = Vec::new();
    let attempts = client
        .query(
            "SELECT op_id, attempt, started_at, ended_at, outcome, error, response
             FROM attempts WHERE op_id = $1 ORDER BY attempt",
            &[&id.0],
        )?
        .iter()
        .map(attempt)
        .collect::<PgResult<Vec<_>>>()?;
    let attempts = flagged(attempts, &mut history_malformed, |a| {
        format!("attempt {}", a.attempt)
    });
    let events = client
        .query(
            "SELECT id, op_id, attempt, at, event, detail FROM events WHERE op_id = $1 ORDER BY id",
            &[&id.0],
        )?
        .iter()
        .map(event)
        .collect::<PgResult<Vec<_>>>()?;
    let events = flagged(events, &mut history_malformed, |e| {
        format!("event {}", e.id)
    });
    let worker_columns = tables.console && tables.worker;
    let (decisions, retry_requests, contract) = if tables.console {
        let decisions = client
            .query(
                &format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE op_id = $1 ORDER BY id"),
                &[&id.0],
            )?
            .iter()
            .map(decision)
            .collect::<PgResult<Vec<_>>>()?;
        let decisions = flagged(decisions, &mut history_malformed, |d| {
            format!("decision {}", d.id)
        });
        let retry_requests = client
            .query(
                if worker_columns {
                    "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                        claimed_by, claim_expires_at, runs, finished_at, outcome
                     FROM retry_requests WHERE op_id = $1 ORDER BY id"
                } else {
                    "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                        NULL::text, NULL::timestamptz, 0::bigint, NULL::timestamptz, NULL::text
                     FROM retry_requests WHERE op_id = $1 ORDER BY id"
                },
                &[&id.0],
            )?
            .iter()
            .map(retry_request)
            .collect::<PgResult<Vec<_>>>()?;
        let retry_requests = flagged(retry_requests, &mut history_malformed, |r| {
            format!("retry request {}", r.id)
        });
        let contract = client
            .query_opt(
                "SELECT op_type, idempotent, key_retention_s, description FROM op_types
                 WHERE op_type = $1",
                &[&operation.op_type],
            )?
            .map(|r| contract(&r))
            .transpose()?
            .map(|one| flagged(vec![one], &mut history_malformed, |_| "op_types row".into()));
        let contract = contract.and_then(|mut one| one.pop());
        (decisions, retry_requests, contract)
    } else {
        (Vec::new(), Vec::new(), None)
    };
    let probes = if worker_columns {
        load_probes(client, id, &mut history_malformed)?
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

fn operation(r: &Row) -> PgResult<Operation> {
    rows::operation(&mut Cells::new(r))
}

fn attempt(r: &Row) -> PgResult<(Attempt, Vec<Malformed>)> {
    rows::attempt(&mut Cells::new(r))
}

fn event(r: &Row) -> PgResult<(Event, Vec<Malformed>)> {
    rows::event(&mut Cells::new(r))
}

pub(crate) fn decision(r: &Row) -> PgResult<(Decision, Vec<Malformed>)> {
    rows::decision(&mut Cells::new(r))
}

fn retry_request(r: &Row) -> PgResult<(RetryRequest, Vec<Malformed>)> {
    rows::retry_request(&mut Cells::new(r))
}

/// What receivers said of one operation, oldest first.
fn load_probes(
    client: &mut impl GenericClient,
    id: OperationId,
    history_malformed: &mut Vec<String>,
) -> PgResult<Vec<Probe>> {
    let probes = client
        .query(
            "SELECT id, op_id, idem_key, command, outcome, result_id, exit, output,
                operator, probed_at, duration_ms
             FROM settle_probes WHERE op_id = $1 ORDER BY id",
            &[&id.0],
        )?
        .iter()
        .map(probe)
        .collect::<PgResult<Vec<_>>>()?;
    Ok(flagged(probes, history_malformed, |p| {
        format!("probe {}", p.id)
    }))
}

fn probe(r: &Row) -> PgResult<(Probe, Vec<Malformed>)> {
    rows::probe(&mut Cells::new(r))
}

fn contract(r: &Row) -> PgResult<(OpTypeContract, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = OpTypeContract {
        op_type: c.text(0, "op_type")?,
        idempotent: c.bool(1, "idempotent")?,
        key_retention_s: c.opt_int(2, "key_retention_s")?,
        description: c.opt_text(3, "description")?,
    };
    Ok((row, c.malformed))
}
