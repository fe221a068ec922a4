//! One operation's whole history (attempts, events, decisions, retry
//! requests, probes, its type's contract), the audit trail's pages, and the
//! resolution of a spec to an id, once for both backends: the statements
//! are spelled by the backend's [`Dialect`] and run on its [`Reader`], each
//! row read tolerantly so a malformed cell is flagged, never fatal. The
//! decision and retry transactions reuse [`load_detail`] on their own
//! transaction: they must judge the rules on what they are about to
//! change. Reads only.

use std::path::Path;

use super::filter::{Statement, seek_plan};
use super::rows::{self, flagged};
use super::sql::{Arg, Dialect, Reader};
use super::tables::Tables;
use crate::domain::{Decision, DecisionId, OperationDetail, OperationId, Seek};
use crate::error::{Error, Result};

const DECISION_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, evidence,
    note, operator, decided_at, op_version, undoes";

/// The history's statements in one dialect, each keyed by `$1`/`?1`.
struct HistorySql {
    operation: String,
    attempts: String,
    events: String,
    decisions: String,
    retry_requests: String,
    contract: String,
    probes: String,
}

impl HistorySql {
    fn new(d: &dyn Dialect, worker_columns: bool) -> HistorySql {
        let key = format!("{}1", d.param_prefix());
        // A ledger older than SQLite schema 5 lacks the worker's columns:
        // they read as a request never claimed.
        let worker = if worker_columns {
            "claimed_by, claim_expires_at, runs, finished_at, outcome".to_string()
        } else {
            [
                ("NULL", "text"),
                ("NULL", "timestamptz"),
                ("0", "bigint"),
                ("NULL", "timestamptz"),
                ("NULL", "text"),
            ]
            .map(|(literal, ty)| d.typed(literal, ty))
            .join(", ")
        };
        HistorySql {
            operation: format!(
                "SELECT id, account, op_type, idem_key, fingerprint, params, state,
                    result_id, max_attempts, deadline_at, {}, key_expires_at, created_at,
                    updated_at, version
                 FROM operations WHERE id = {key}",
                d.as_text("lease_expires_at")
            ),
            attempts: format!(
                "SELECT op_id, attempt, started_at, ended_at, outcome, error, response
                 FROM attempts WHERE op_id = {key} ORDER BY attempt"
            ),
            events: format!(
                "SELECT id, op_id, attempt, at, event, detail FROM events
                 WHERE {} ORDER BY id",
                d.events_of(&key)
            ),
            decisions: format!(
                "SELECT {DECISION_COLUMNS} FROM decisions WHERE op_id = {key} ORDER BY id"
            ),
            retry_requests: format!(
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                    {worker}
                 FROM retry_requests WHERE op_id = {key} ORDER BY id"
            ),
            contract: format!(
                "SELECT op_type, idempotent, key_retention_s, description FROM op_types
                 WHERE op_type = {key}"
            ),
            probes: format!(
                "SELECT id, op_id, idem_key, command, outcome, result_id, exit, output,
                    operator, probed_at, duration_ms
                 FROM settle_probes WHERE op_id = {key} ORDER BY id"
            ),
        }
    }
}

/// Reads one operation's whole history; `None` when there is no such
/// operation. What `tables` says the ledger lacks reads as empty.
pub(super) fn load_detail<R: Reader>(
    r: &mut R,
    id: OperationId,
    tables: Tables,
) -> std::result::Result<Option<OperationDetail>, R::Error> {
    // Schema 5's probes and worker columns; a read-only look at an older
    // ledger has neither.
    let worker_columns = tables.console && tables.worker;
    let sql = HistorySql::new(r.dialect(), worker_columns);
    load_history(r, [&sql.operation, &sql.attempts, &sql.events], id, tables)
}

/// [`load_detail`] with the operation, its attempts and its events read by
/// `[operation, attempts, events]`, each keyed by the id as the first
/// placeholder (a job queue reads them from the engine's own record).
pub(super) fn load_history<R: Reader>(
    r: &mut R,
    [operation, attempts, events]: [&str; 3],
    id: OperationId,
    tables: Tables,
) -> std::result::Result<Option<OperationDetail>, R::Error> {
    let key = [Arg::Int(id.0)];
    let Some(operation) = r.row(operation, &key, &mut |c| rows::operation(c))? else {
        return Ok(None);
    };
    let mut malformed = Vec::new();
    let attempts = r.rows(attempts, &key, &mut |c| rows::attempt(c))?;
    let attempts = flagged(attempts, &mut malformed, |a| {
        format!("attempt {}", a.attempt)
    });
    let events = r.rows(events, &key, &mut |c| rows::event(c))?;
    let events = flagged(events, &mut malformed, |e| format!("event {}", e.id));
    let mut detail = OperationDetail {
        operation,
        attempts,
        events,
        decisions: Vec::new(),
        retry_requests: Vec::new(),
        probes: Vec::new(),
        contract: None,
        declared: None,
        drill: None,
        history_malformed: malformed,
    };
    settle_history(r, &mut detail, tables)?;
    Ok(Some(detail))
}

/// What settle itself keeps about an operation read into `detail`: its
/// decisions, retry requests, probes and its type's contract, each where
/// `tables` says the ledger has it; malformed cells join the detail's. A
/// ledger's operations, or a job queue's jobs, are read by the caller.
fn settle_history<R: Reader>(
    r: &mut R,
    detail: &mut OperationDetail,
    tables: Tables,
) -> std::result::Result<(), R::Error> {
    let worker_columns = tables.console && tables.worker;
    let sql = HistorySql::new(r.dialect(), worker_columns);
    let key = [Arg::Int(detail.operation.id.0)];
    let malformed = &mut detail.history_malformed;
    if tables.console {
        let decisions = r.rows(&sql.decisions, &key, &mut |c| rows::decision(c))?;
        detail.decisions = flagged(decisions, malformed, |d| format!("decision {}", d.id));
        let requests = r.rows(&sql.retry_requests, &key, &mut |c| rows::retry_request(c))?;
        detail.retry_requests = flagged(requests, malformed, |r| format!("retry request {}", r.id));
        let op_type = [Arg::Text(detail.operation.op_type.clone())];
        let contract = r.row(&sql.contract, &op_type, &mut |c| rows::contract(c))?;
        detail.contract =
            contract.and_then(|one| flagged(vec![one], malformed, |_| "op_types row".into()).pop());
        detail.drill = super::drills::latest(r, &detail.operation.op_type)?;
    }
    if worker_columns {
        let probes = r.rows(&sql.probes, &key, &mut |c| rows::probe(c))?;
        detail.probes = flagged(probes, malformed, |p| format!("probe {}", p.id));
    }
    Ok(())
}

/// How many decisions lie beyond `seek` in the trail's order (newest
/// first): what a limit left out. One count on the primary key.
pub(super) fn audit_count<R: Reader>(
    r: &mut R,
    tables: Tables,
    seek: Seek<DecisionId>,
) -> std::result::Result<usize, R::Error> {
    if !tables.console {
        return Ok(0);
    }
    let key = format!("{}1", r.dialect().param_prefix());
    let (sql, args) = match seek_plan(seek, true).2 {
        Some((id, condition)) => (
            format!("SELECT count(*) FROM decisions WHERE id {condition} {key}"),
            vec![Arg::Int(id.0)],
        ),
        None => ("SELECT count(*) FROM decisions".to_string(), Vec::new()),
    };
    let n = r.row(&sql, &args, &mut |c| c.int(0, "count"))?;
    Ok(n.map_or(0, |n| usize::try_from(n).unwrap_or(0)))
}

/// One page of decisions, newest first, for `settle audit` and the
/// console's Audit view.
pub(super) fn audit_page<R: Reader>(
    r: &mut R,
    tables: Tables,
    seek: Seek<DecisionId>,
    limit: usize,
) -> std::result::Result<Vec<Decision>, R::Error> {
    if !tables.console {
        return Ok(Vec::new());
    }
    let p = r.dialect().param_prefix();
    let (order, reverse, bound) = seek_plan(seek, true);
    let limit = Arg::Int(limit.min(i64::MAX as usize) as i64);
    let (sql, args) = match bound {
        // Newest first: `condition` is `<` after an id, `>` before.
        Some((id, condition)) => (
            format!(
                "SELECT {DECISION_COLUMNS} FROM decisions WHERE id {condition} {p}1
                 ORDER BY id {order} LIMIT {p}2"
            ),
            vec![Arg::Int(id.0), limit],
        ),
        None => (
            format!("SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id {order} LIMIT {p}1"),
            vec![limit],
        ),
    };
    let mut rows = r.rows(&sql, &args, &mut |c| rows::decision(c).map(|(d, _)| d))?;
    if reverse {
        rows.reverse();
    }
    Ok(rows)
}

/// Finds an operation by id (`42`) or natural key (`account/op_type/key`;
/// the key may itself contain `/`), in the dialect `d`. `ledger` names it
/// in errors; `ids` runs a lookup and gives the ids it selects.
pub(super) fn resolve(
    d: &dyn Dialect,
    spec: &str,
    ledger: &Path,
    mut ids: impl FnMut(&Statement) -> Result<Vec<i64>>,
) -> Result<OperationId> {
    let not_found = || Error::NotFound {
        path: ledger.to_path_buf(),
        what: format!("{spec:?}"),
    };
    let p = d.param_prefix();
    if let Ok(id) = spec.trim().parse::<i64>() {
        let found = ids(&Statement {
            sql: format!("SELECT id FROM {} WHERE id = {p}1", d.operations()),
            args: vec![Arg::Int(id)],
        })?;
        return found.first().map(|_| OperationId(id)).ok_or_else(not_found);
    }
    let mut parts = spec.splitn(3, '/');
    let (Some(account), Some(op_type), Some(key)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(Error::Usage(format!(
            "{spec:?} is neither an operation id nor account/op_type/key"
        )));
    };
    // Every match, not the first: a ledger created without the UNIQUE
    // constraint may hold two, and guessing would decide on the wrong one.
    let ids = ids(&Statement {
        sql: format!(
            "SELECT id FROM {}
             WHERE account = {p}1 AND op_type = {p}2 AND idem_key = {p}3 ORDER BY id",
            d.operations()
        ),
        args: natural_key(account, op_type, key),
    })?;
    match ids[..] {
        [] => Err(not_found()),
        [id] => Ok(OperationId(id)),
        _ => Err(Error::Ambiguous {
            path: ledger.to_path_buf(),
            spec: spec.to_string(),
            ids: ids.into_iter().map(OperationId).collect(),
        }),
    }
}

/// The id of the operation with this natural key, if the ledger holds it:
/// how the console links a drill case to the operation `settle drill
/// import` wrote for it. One indexed read (the natural key is unique);
/// `ids` runs it in the dialect `d`.
pub(super) fn operation_by_key(
    d: &dyn Dialect,
    (account, op_type, key): (&str, &str, &str),
    ids: impl FnOnce(&Statement) -> Result<Vec<i64>>,
) -> Result<Option<OperationId>> {
    let p = d.param_prefix();
    let found = ids(&Statement {
        sql: format!(
            "SELECT id FROM {}
             WHERE account = {p}1 AND op_type = {p}2 AND idem_key = {p}3 ORDER BY id LIMIT 1",
            d.operations()
        ),
        args: natural_key(account, op_type, key),
    })?;
    Ok(found.first().copied().map(OperationId))
}

fn natural_key(account: &str, op_type: &str, key: &str) -> Vec<Arg> {
    [account, op_type, key]
        .map(|t| Arg::Text(t.to_string()))
        .to_vec()
}
