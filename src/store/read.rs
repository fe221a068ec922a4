//! Reads: pages of operations for a filter, counts per state, one
//! operation's whole history, the audit trail. Every list is a bounded page
//! found through an index (keyset pagination on `id`), never a full load.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::Ledger;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, OpTypeContract, Operation, OperationDetail, OperationId,
    OperationRow, Outcome, RetryRequest, Seek, State, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::{Pattern, Query};

/// A list row from the derived summary that triggers keep current: one
/// primary-key lookup per row.
const ROW_SOURCE: &str = "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    coalesce(s.attempts, 0), o.max_attempts, s.last_event, s.last_error,
    o.result_id, CAST(o.lease_expires_at AS TEXT), o.created_at, o.updated_at, o.version
    FROM operations o LEFT JOIN settle_op_summary s ON s.op_id = o.id";

/// The same row for a ledger shown read-only without adopting it (no
/// summary table): three subqueries per row, still bounded by the page.
const ROW_SOURCE_UNADOPTED: &str = "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    (SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id),
    o.max_attempts,
    (SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1),
    (SELECT a.error FROM attempts a WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1),
    o.result_id, CAST(o.lease_expires_at AS TEXT), o.created_at, o.updated_at, o.version
    FROM operations o";

/// The states an operation in the triage queue can have, as the partial
/// index `settle_operations_queue` and the queue predicate both spell it
/// (SQLite uses a partial index only when the query repeats its condition).
/// The unary `+` keeps the planner off `settle_operations_state`, which
/// would read the states one after the other and sort the whole queue.
pub(super) fn queue_candidates_sql(column: &str) -> String {
    let words: Vec<String> = State::QUEUE
        .iter()
        .chain([State::Reserved].iter())
        .map(|s| format!("'{}'", s.as_str().replace('\'', "''")))
        .collect();
    format!("+{column} IN ({})", words.join(", "))
}

/// The reserved rows the index `settle_operations_reserved_lease` holds;
/// `+` as in [`queue_candidates_sql`], so that index, not the state index,
/// counts the stale ones.
pub(super) const STALE_CANDIDATES: &str = "+state = 'reserved'";

/// A lease as seconds since the epoch, whatever form a service wrote it in:
/// RFC 3339 with any offset, SQLite's `datetime('now')` form, or epoch
/// seconds (a TEXT column stores them as digits: [`crate::domain::parse_time`]
/// reads the same forms). No lease is 0 (stale: nobody owns it, see
/// [`crate::domain::stale_reservation`]); text that is not a time is NULL
/// (never stale). The index `settle_operations_reserved_lease` is on this
/// exact expression.
pub(super) fn instant_sql(column: &str) -> String {
    format!(
        "(CASE WHEN {column} IS NULL THEN 0 \
         WHEN typeof({column}) IN ('integer', 'real') \
           OR ({column} GLOB '[0-9]*' AND {column} NOT GLOB '*[^0-9.]*') \
           THEN CAST({column} AS INTEGER) \
         ELSE unixepoch({column}) END)"
    )
}

/// The keyset condition on `column`, the order to read in, the bound, and
/// whether the rows must be reversed into list order.
fn seek_plan<Id>(seek: Seek<Id>, column: &str) -> (String, &'static str, Option<Id>, bool) {
    match seek {
        Seek::First => (String::new(), "DESC", None, false),
        Seek::After(id) => (format!("{column} <"), "DESC", Some(id), false),
        Seek::Before(id) => (format!("{column} >"), "ASC", Some(id), true),
        Seek::Last => (String::new(), "ASC", None, true),
    }
}

const OPERATION_COLUMNS: &str = "id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, CAST(lease_expires_at AS TEXT), key_expires_at, created_at,
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
        let (sql, values, reverse) = self.page_sql(query, seek, Some(limit), now);
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

    /// Every operation matching `query`, newest first, handed to `each` as
    /// one statement reads it: no page re-sorts, no rows held in memory. For
    /// `settle list --all`; `each` returning an error stops the read.
    pub fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        mut each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        let (sql, values, _) = self.page_sql(query, Seek::First, None, now);
        let mut stmt = self
            .conn
            .prepare(&sql)
            .map_err(|e| self.err("preparing the list query", e))?;
        let mut rows = stmt
            .query(params_from_iter(values))
            .map_err(|e| self.err("listing operations", e))?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(|e| self.err("listing operations", e))? {
            each(operation_row(row).map_err(|e| self.err("listing operations", e))?)?;
            n += 1;
        }
        Ok(n)
    }

    /// The statement, its parameters and whether to reverse the rows, for a
    /// page (`limit`) or the whole list (`None`).
    pub(super) fn page_sql(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: Option<usize>,
        now: DateTime<Utc>,
    ) -> (String, Vec<Value>, bool) {
        let (mut clause, mut values) = where_clause(query, now, self.derived);
        let (condition, order, bound, reverse) = seek_plan(seek, "o.id");
        if let Some(id) = bound {
            values.push(Value::Integer(id.0));
            clause.push(format!("{condition} ?{}", values.len()));
        }
        let limit = match limit {
            Some(n) => {
                values.push(Value::Integer(n.min(i64::MAX as usize) as i64));
                format!(" LIMIT ?{}", values.len())
            }
            None => String::new(),
        };
        let source = if self.derived {
            ROW_SOURCE
        } else {
            ROW_SOURCE_UNADOPTED
        };
        let sql = format!(
            "{source} {} ORDER BY o.id {order}{limit}",
            where_sql(&clause)
        );
        (sql, values, reverse)
    }

    /// How many operations match `query`. May scan: callers on the screen
    /// path run it off the UI thread.
    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        let (clause, values) = where_clause(query, now, self.derived);
        let from = if self.derived {
            "operations o LEFT JOIN settle_op_summary s ON s.op_id = o.id"
        } else {
            "operations o"
        };
        let sql = format!("SELECT COUNT(*) FROM {from} {}", where_sql(&clause));
        self.conn
            .query_row(&sql, params_from_iter(values), |r| r.get(0))
            .map_err(|e| self.err("counting operations", e))
    }

    /// Operations per state: the trigger-kept `settle_state_counts` (a few
    /// rows) and the stale reservations through the lease index, so the cost
    /// does not grow with the ledger. An unadopted ledger is counted.
    pub fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        let sql = if self.derived {
            "SELECT state, n FROM settle_state_counts WHERE n <> 0"
        } else {
            "SELECT state, COUNT(*) FROM operations GROUP BY state"
        };
        let mut stmt = self
            .conn
            .prepare_cached(sql)
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
                &format!(
                    "SELECT COUNT(*) FROM operations WHERE {STALE_CANDIDATES} AND {} <= ?1",
                    instant_sql("lease_expires_at")
                ),
                [now.timestamp()],
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
        let (condition, order, bound, reverse) = seek_plan(seek, "id");
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
/// never enter the SQL text. `derived`: the summary table is there (joined
/// as `s`). Each condition is written so an index ending in `id` serves it
/// and the page needs no sort (`store/plans.rs` asserts the plans).
fn where_clause(query: &Query, now: DateTime<Utc>, derived: bool) -> (Vec<String>, Vec<Value>) {
    let mut clause = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let param = |values: &mut Vec<Value>, v: Value| {
        values.push(v);
        format!("?{}", values.len())
    };
    if query.queue {
        // The candidates term is repeated verbatim so the partial index
        // settle_operations_queue (already in id order) serves the page.
        let now = param(&mut values, Value::Integer(now.timestamp()));
        clause.push(queue_candidates_sql("o.state"));
        clause.push(format!(
            "(o.state <> 'reserved' OR {} <= {now})",
            instant_sql("o.lease_expires_at")
        ));
    }
    if !query.states.is_empty() {
        let list: Vec<String> = query
            .states
            .iter()
            .map(|s| param(&mut values, Value::Text(s.as_str().to_string())))
            .collect();
        // One state: its run of settle_operations_state is in id order.
        // Several: walking the id order and filtering beats reading each
        // state's run and sorting them all (`+` keeps the index out).
        let plus = if list.len() > 1 { "+" } else { "" };
        clause.push(format!("{plus}o.state IN ({})", list.join(", ")));
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
                Pattern::Glob(v) => {
                    let glob = format!(
                        "{column} GLOB {}",
                        param(&mut values, Value::Text(glob_literal(v)))
                    );
                    // An explicit range over the literal prefix lets the
                    // column's index find the matches, whatever the pattern.
                    match prefix_range(v) {
                        Some((low, high)) => format!(
                            "({column} >= {} AND {column} < {} AND {glob})",
                            param(&mut values, Value::Text(low)),
                            param(&mut values, Value::Text(high)),
                        ),
                        None => glob,
                    }
                }
            })
            .collect();
        clause.push(format!("({})", alternatives.join(" OR ")));
    }
    for (cmp, n) in &query.attempts {
        let p = param(&mut values, Value::Integer(*n));
        if derived {
            clause.push(format!("coalesce(s.attempts, 0) {} {p}", cmp.sql()));
        } else {
            clause.push(format!(
                "(SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id) {} {p}",
                cmp.sql()
            ));
        }
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

/// The range `[low, high)` every match of a `*` pattern lies in: its text
/// before the first wildcard, and that text with its last character
/// advanced. `None` when the pattern starts with `*`.
fn prefix_range(pattern: &str) -> Option<(String, String)> {
    let literal = pattern.split('*').next().unwrap_or_default();
    let mut chars: Vec<char> = literal.chars().collect();
    let last = chars.pop()?;
    let next = char::from_u32(last as u32 + 1)?;
    let high: String = chars.iter().chain([next].iter()).collect();
    Some((literal.to_string(), high))
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
