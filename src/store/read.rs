//! Reads: pages of operations for a filter, counts per state, one
//! operation's whole history, the audit trail. Every list is a bounded page
//! found through an index (keyset pagination on `id`), never a full load.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::Ledger;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, OpTypeContract, Operation, OperationDetail, OperationId,
    OperationRow, Outcome, RetryRequest, State, format_time,
};
use crate::error::{Error, Result};
use crate::query::{Pattern, Query};

/// Where a page starts, for any list ordered newest first by row id
/// (operations by [`OperationId`], the audit trail by [`DecisionId`]; the
/// console's window asks with plain `i64` and maps it with [`Seek::map`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek<Id = OperationId> {
    /// The newest rows.
    First,
    /// The rows that follow (are older than) this id.
    After(Id),
    /// The rows that precede (are newer than) this id; returned in list
    /// order, newest first, ending just before the id.
    Before(Id),
    /// The oldest rows, in list order.
    Last,
}

impl<Id> Seek<Id> {
    /// The same place, with the id turned into another type.
    pub fn map<J>(self, f: impl FnOnce(Id) -> J) -> Seek<J> {
        match self {
            Seek::First => Seek::First,
            Seek::After(id) => Seek::After(f(id)),
            Seek::Before(id) => Seek::Before(f(id)),
            Seek::Last => Seek::Last,
        }
    }

    /// The keyset condition on `column`, the order to read in, the bound,
    /// and whether the rows must be reversed into list order.
    fn plan(self, column: &str) -> (String, &'static str, Option<Id>, bool) {
        match self {
            Seek::First => (String::new(), "DESC", None, false),
            Seek::After(id) => (format!("{column} <"), "DESC", Some(id), false),
            Seek::Before(id) => (format!("{column} >"), "ASC", Some(id), true),
            Seek::Last => (String::new(), "ASC", None, true),
        }
    }
}

/// Operations per state, for the header and `settle list` summaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Every state word present, with its count, in [`State::KNOWN`] order
    /// and unrecognised words after.
    pub by_state: Vec<(State, i64)>,
    /// `reserved` operations whose lease has passed (part of the queue).
    pub stale_reserved: i64,
    pub total: i64,
}

impl StateCounts {
    pub fn get(&self, state: &State) -> i64 {
        self.by_state
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n)
    }

    /// Size of the triage queue.
    pub fn queue(&self) -> i64 {
        State::QUEUE.iter().map(|s| self.get(s)).sum::<i64>() + self.stale_reserved
    }
}

const ROW_COLUMNS: &str = "o.id, o.state, o.account, o.op_type, o.idem_key,
    (SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id),
    o.max_attempts,
    (SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1),
    (SELECT a.error FROM attempts a WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1),
    o.result_id, o.lease_expires_at, o.created_at, o.updated_at, o.version";

const OPERATION_COLUMNS: &str = "id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, lease_expires_at, key_expires_at, created_at,
    updated_at, version";

const DECISION_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, evidence,
    note, operator, decided_at, op_version, undoes";

impl Ledger {
    /// One page of operations matching `query`, newest first.
    pub fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let (mut clause, mut values) = where_clause(query, now);
        let (condition, order, bound, reverse) = seek.plan("o.id");
        if let Some(id) = bound {
            values.push(Value::Integer(id.0));
            clause.push(format!("{condition} ?{}", values.len()));
        }
        values.push(Value::Integer(limit.min(i64::MAX as usize) as i64));
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM operations o {} ORDER BY o.id {order} LIMIT ?{}",
            where_sql(&clause),
            values.len()
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.err("preparing the list query", e))?;
        let mut rows = stmt
            .query_map(params_from_iter(values), operation_row)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err("listing operations", e))?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }

    /// How many operations match `query`. May scan: callers on the screen
    /// path run it off the UI thread.
    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        let (clause, values) = where_clause(query, now);
        let sql = format!("SELECT COUNT(*) FROM operations o {}", where_sql(&clause));
        self.conn
            .query_row(&sql, params_from_iter(values), |r| r.get(0))
            .map_err(|e| self.err("counting operations", e))
    }

    /// Operations per state (an index-only scan of `settle_operations_state`).
    pub fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT state, COUNT(*) FROM operations GROUP BY state")
            .map_err(|e| self.err("counting states", e))?;
        let raw = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err("counting states", e))?;
        let mut by_state: Vec<(State, i64)> = raw
            .into_iter()
            .map(|(s, n)| (State::parse(&s), n))
            .collect();
        by_state.sort_by_key(|(s, _)| {
            State::KNOWN
                .iter()
                .position(|k| k == s)
                .unwrap_or(State::KNOWN.len())
        });
        let stale_reserved = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM operations WHERE state = 'reserved'
                 AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)",
                [format_time(now)],
                |r| r.get(0),
            )
            .map_err(|e| self.err("counting stale reservations", e))?;
        let total = by_state.iter().map(|(_, n)| n).sum();
        Ok(StateCounts {
            by_state,
            stale_reserved,
            total,
        })
    }

    /// Finds an operation by id (`42`) or natural key (`account/op_type/key`;
    /// the key may itself contain `/`).
    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        let not_found = || Error::NotFound {
            path: self.path.clone(),
            what: format!("{spec:?}"),
        };
        if let Ok(id) = spec.trim().parse::<i64>() {
            let found: Option<i64> = self
                .conn
                .query_row("SELECT id FROM operations WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.err("finding the operation", e))?;
            return found.map(OperationId).ok_or_else(not_found);
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
        let ids = self
            .conn
            .prepare_cached(
                "SELECT id FROM operations WHERE account = ?1 AND op_type = ?2 AND idem_key = ?3
                 ORDER BY id",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![account, op_type, key], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()
            })
            .map_err(|e| self.err("finding the operation", e))?;
        match ids[..] {
            [] => Err(not_found()),
            [id] => Ok(OperationId(id)),
            _ => Err(Error::Ambiguous {
                path: self.path.clone(),
                spec: spec.to_string(),
                ids: ids.into_iter().map(OperationId).collect(),
            }),
        }
    }

    /// The operation with its attempts, events, decisions, retry requests and
    /// its type's contract.
    pub fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        load_detail(&self.conn, id, self.console_tables)
            .map_err(|e| self.err(&format!("reading operation {id}"), e))?
            .ok_or_else(|| Error::NotFound {
                path: self.path.clone(),
                what: id.to_string(),
            })
    }

    /// One page of decisions, newest first, for `settle audit` and the
    /// console's Audit view.
    pub fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        if !self.console_tables {
            return Ok(Vec::new());
        }
        let (condition, order, bound, reverse) = seek.plan("id");
        let (sql, args) = match bound {
            Some(id) => (
                format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE {condition} ?1 ORDER BY id {order} LIMIT ?2"
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
                stmt.query_map(params_from_iter(args), decision)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.err("reading the audit trail", e))?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }
}

/// Reads one operation's whole history. Shared by [`Ledger::detail`] and the
/// decision transaction, which must judge the rules on what it is about to
/// change.
pub(super) fn load_detail(
    conn: &Connection,
    id: OperationId,
    console_tables: bool,
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
    let events = conn
        .prepare_cached(
            "SELECT id, op_id, attempt, at, event, detail FROM events WHERE op_id = ?1 ORDER BY id",
        )?
        .query_map([id.0], event)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (decisions, retry_requests, contract) = if console_tables {
        let decisions = conn
            .prepare_cached(&format!(
                "SELECT {DECISION_COLUMNS} FROM decisions WHERE op_id = ?1 ORDER BY id"
            ))?
            .query_map([id.0], decision)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let retry_requests = conn
            .prepare_cached(
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id
                 FROM retry_requests WHERE op_id = ?1 ORDER BY id",
            )?
            .query_map([id.0], retry_request)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let contract = conn
            .prepare_cached(
                "SELECT op_type, idempotent, key_retention_s, description FROM op_types WHERE op_type = ?1",
            )?
            .query_row([&operation.op_type], contract)
            .optional()?;
        (decisions, retry_requests, contract)
    } else {
        (Vec::new(), Vec::new(), None)
    };
    Ok(Some(OperationDetail {
        operation,
        attempts,
        events,
        decisions,
        retry_requests,
        contract,
    }))
}

fn where_sql(clause: &[String]) -> String {
    if clause.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clause.join(" AND "))
    }
}

/// Turns a parsed filter into SQL conditions with numbered parameters. Values
/// never enter the SQL text.
fn where_clause(query: &Query, now: DateTime<Utc>) -> (Vec<String>, Vec<Value>) {
    let mut clause = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let param = |values: &mut Vec<Value>, v: Value| {
        values.push(v);
        format!("?{}", values.len())
    };
    if query.queue {
        let now = param(&mut values, Value::Text(format_time(now)));
        clause.push(format!(
            "(o.state IN ('unknown', 'exhausted', 'conflict') OR (o.state = 'reserved' AND (o.lease_expires_at IS NULL OR o.lease_expires_at <= {now})))"
        ));
    }
    if !query.states.is_empty() {
        let list: Vec<String> = query
            .states
            .iter()
            .map(|s| param(&mut values, Value::Text(s.as_str().to_string())))
            .collect();
        clause.push(format!("o.state IN ({})", list.join(", ")));
    }
    for (column, patterns) in [
        ("o.account", &query.accounts),
        ("o.op_type", &query.op_types),
        ("o.idem_key", &query.keys),
    ] {
        if patterns.is_empty() {
            continue;
        }
        let alternatives: Vec<String> = patterns
            .iter()
            .map(|p| match p {
                Pattern::Exact(v) => {
                    format!("{column} = {}", param(&mut values, Value::Text(v.clone())))
                }
                Pattern::Glob(v) => format!(
                    "{column} GLOB {}",
                    param(&mut values, Value::Text(glob_literal(v)))
                ),
            })
            .collect();
        clause.push(format!("({})", alternatives.join(" OR ")));
    }
    for (cmp, n) in &query.attempts {
        let p = param(&mut values, Value::Integer(*n));
        clause.push(format!(
            "(SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id) {} {p}",
            cmp.sql()
        ));
    }
    for text in &query.errors {
        let p = param(&mut values, Value::Text(like_contains(text)));
        clause.push(format!(
            "EXISTS (SELECT 1 FROM attempts a WHERE a.op_id = o.id AND a.error LIKE {p} ESCAPE '\\')"
        ));
    }
    for text in &query.text {
        let p = param(&mut values, Value::Text(like_contains(text)));
        let mut alternatives = vec![
            format!("o.account LIKE {p} ESCAPE '\\'"),
            format!("o.op_type LIKE {p} ESCAPE '\\'"),
            format!("o.idem_key LIKE {p} ESCAPE '\\'"),
            format!("o.result_id LIKE {p} ESCAPE '\\'"),
        ];
        if let Ok(id) = text.trim().trim_start_matches('#').parse::<i64>() {
            let id = param(&mut values, Value::Integer(id));
            alternatives.push(format!("o.id = {id}"));
        }
        clause.push(format!("({})", alternatives.join(" OR ")));
    }
    (clause, values)
}

/// `*` is the wildcard; every other GLOB metacharacter is taken literally.
fn glob_literal(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        match c {
            '?' => out.push_str("[?]"),
            '[' => out.push_str("[[]"),
            c => out.push(c),
        }
    }
    out
}

fn like_contains(text: &str) -> String {
    let mut out = String::from("%");
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

fn operation_row(r: &Row<'_>) -> rusqlite::Result<OperationRow> {
    Ok(OperationRow {
        id: OperationId(r.get(0)?),
        state: State::parse(&r.get::<_, String>(1)?),
        account: r.get(2)?,
        op_type: r.get(3)?,
        idem_key: r.get(4)?,
        attempts: r.get(5)?,
        max_attempts: r.get(6)?,
        last_event: r.get(7)?,
        last_error: r.get(8)?,
        result_id: r.get(9)?,
        lease_expires_at: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        version: r.get(13)?,
    })
}

fn operation(r: &Row<'_>) -> rusqlite::Result<Operation> {
    Ok(Operation {
        id: OperationId(r.get(0)?),
        account: r.get(1)?,
        op_type: r.get(2)?,
        idem_key: r.get(3)?,
        fingerprint: r.get(4)?,
        params: r.get(5)?,
        state: State::parse(&r.get::<_, String>(6)?),
        result_id: r.get(7)?,
        max_attempts: r.get(8)?,
        deadline_at: r.get(9)?,
        lease_expires_at: r.get(10)?,
        key_expires_at: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
        version: r.get(14)?,
    })
}

fn attempt(r: &Row<'_>) -> rusqlite::Result<Attempt> {
    Ok(Attempt {
        op_id: OperationId(r.get(0)?),
        attempt: r.get(1)?,
        started_at: r.get(2)?,
        ended_at: r.get(3)?,
        outcome: Outcome::parse(&r.get::<_, String>(4)?),
        error: r.get(5)?,
        response: r.get(6)?,
    })
}

fn event(r: &Row<'_>) -> rusqlite::Result<Event> {
    Ok(Event {
        id: r.get(0)?,
        op_id: OperationId(r.get(1)?),
        attempt: r.get(2)?,
        at: r.get(3)?,
        event: r.get(4)?,
        detail: r.get(5)?,
    })
}

fn decision(r: &Row<'_>) -> rusqlite::Result<Decision> {
    Ok(Decision {
        id: DecisionId(r.get(0)?),
        op_id: OperationId(r.get(1)?),
        decision: r.get(2)?,
        from_state: r.get(3)?,
        to_state: r.get(4)?,
        result_id: r.get(5)?,
        evidence: r.get(6)?,
        note: r.get(7)?,
        operator: r.get(8)?,
        decided_at: r.get(9)?,
        op_version: r.get(10)?,
        undoes: r.get::<_, Option<i64>>(11)?.map(DecisionId),
    })
}

fn retry_request(r: &Row<'_>) -> rusqlite::Result<RetryRequest> {
    Ok(RetryRequest {
        id: r.get(0)?,
        op_id: OperationId(r.get(1)?),
        idem_key: r.get(2)?,
        requested_at: r.get(3)?,
        requested_by: r.get(4)?,
        status: r.get(5)?,
        decision_id: DecisionId(r.get(6)?),
    })
}

fn contract(r: &Row<'_>) -> rusqlite::Result<OpTypeContract> {
    Ok(OpTypeContract {
        op_type: r.get(0)?,
        idempotent: r.get::<_, i64>(1)? == 1,
        key_retention_s: r.get(2)?,
        description: r.get(3)?,
    })
}
