//! Reads: pages of operations for a filter, counts per state, one
//! operation's whole history, the audit trail. Every list is a bounded page
//! found through an index (keyset pagination on `id`), never a full load.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::Ledger;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, Malformed, OpTypeContract, Operation, OperationDetail,
    OperationId, OperationRow, Outcome, RetryRequest, Seek, State, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::{Pattern, Query};

mod cells;
use cells::Cells;

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
            .query_map([], |r| {
                let mut c = Cells::new(r);
                Ok((c.text(0, "state")?, c.int(1, "n")?))
            })
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
    let (decisions, retry_requests, contract) = if console_tables {
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
            .prepare_cached(
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id
                 FROM retry_requests WHERE op_id = ?1 ORDER BY id",
            )?
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
    Ok(Some(OperationDetail {
        operation,
        attempts,
        events,
        decisions,
        retry_requests,
        contract,
        history_malformed,
    }))
}

/// The rows without their flags, each flag kept in `out` as `attempt 2:
/// error: a 3-byte BLOB` (`whose` names the row).
fn flagged<T>(
    rows: Vec<(T, Vec<Malformed>)>,
    out: &mut Vec<String>,
    whose: impl Fn(&T) -> String,
) -> Vec<T> {
    rows.into_iter()
        .map(|(row, cells)| {
            for m in &cells {
                out.push(format!("{}: {}: {}", whose(&row), m.column, m.found));
            }
            row
        })
        .collect()
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

/// A list row, read cell by cell so a malformed one is flagged on the row
/// instead of failing the page (see [`cells`]).
fn operation_row(r: &Row<'_>) -> rusqlite::Result<OperationRow> {
    let mut c = Cells::new(r);
    Ok(OperationRow {
        id: OperationId(c.int(0, "id")?),
        state: State::parse(&c.text(1, "state")?),
        account: c.text(2, "account")?,
        op_type: c.text(3, "op_type")?,
        idem_key: c.text(4, "idem_key")?,
        attempts: c.int(5, "attempts")?,
        max_attempts: c.int(6, "max_attempts")?,
        last_event: c.opt_text(7, "last_event")?,
        last_error: c.opt_text(8, "last_error")?,
        result_id: c.opt_text(9, "result_id")?,
        lease_expires_at: c.opt_time(10, "lease_expires_at")?,
        created_at: c.time(11, "created_at")?,
        updated_at: c.time(12, "updated_at")?,
        version: c.int(13, "version")?,
        malformed: c.malformed,
    })
}

fn operation(r: &Row<'_>) -> rusqlite::Result<Operation> {
    let mut c = Cells::new(r);
    Ok(Operation {
        id: OperationId(c.int(0, "id")?),
        account: c.text(1, "account")?,
        op_type: c.text(2, "op_type")?,
        idem_key: c.text(3, "idem_key")?,
        fingerprint: c.text(4, "fingerprint")?,
        params: c.opt_text(5, "params")?,
        state: State::parse(&c.text(6, "state")?),
        result_id: c.opt_text(7, "result_id")?,
        max_attempts: c.int(8, "max_attempts")?,
        deadline_at: c.opt_time(9, "deadline_at")?,
        lease_expires_at: c.opt_time(10, "lease_expires_at")?,
        key_expires_at: c.opt_time(11, "key_expires_at")?,
        created_at: c.time(12, "created_at")?,
        updated_at: c.time(13, "updated_at")?,
        version: c.int(14, "version")?,
        malformed: c.malformed,
    })
}

// The history rows below are read as tolerantly; their malformed cells are
// gathered on the detail by [`flagged`] (see `history_malformed`).

fn attempt(r: &Row<'_>) -> rusqlite::Result<(Attempt, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = Attempt {
        op_id: OperationId(c.int(0, "op_id")?),
        attempt: c.int(1, "attempt")?,
        started_at: c.text(2, "started_at")?,
        ended_at: c.opt_text(3, "ended_at")?,
        outcome: Outcome::parse(&c.text(4, "outcome")?),
        error: c.opt_text(5, "error")?,
        response: c.opt_text(6, "response")?,
    };
    Ok((row, c.malformed))
}

fn event(r: &Row<'_>) -> rusqlite::Result<(Event, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = Event {
        id: c.int(0, "id")?,
        op_id: OperationId(c.int(1, "op_id")?),
        attempt: c.opt_int(2, "attempt")?,
        at: c.text(3, "at")?,
        event: c.text(4, "event")?,
        detail: c.opt_text(5, "detail")?,
    };
    Ok((row, c.malformed))
}

fn decision(r: &Row<'_>) -> rusqlite::Result<(Decision, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = Decision {
        id: DecisionId(c.int(0, "id")?),
        op_id: OperationId(c.int(1, "op_id")?),
        decision: c.text(2, "decision")?,
        from_state: c.text(3, "from_state")?,
        to_state: c.text(4, "to_state")?,
        result_id: c.opt_text(5, "result_id")?,
        evidence: c.opt_text(6, "evidence")?,
        note: c.opt_text(7, "note")?,
        operator: c.text(8, "operator")?,
        decided_at: c.text(9, "decided_at")?,
        op_version: c.int(10, "op_version")?,
        undoes: c.opt_int(11, "undoes")?.map(DecisionId),
    };
    Ok((row, c.malformed))
}

fn retry_request(r: &Row<'_>) -> rusqlite::Result<(RetryRequest, Vec<Malformed>)> {
    let mut c = Cells::new(r);
    let row = RetryRequest {
        id: c.int(0, "id")?,
        op_id: OperationId(c.int(1, "op_id")?),
        idem_key: c.text(2, "idem_key")?,
        requested_at: c.text(3, "requested_at")?,
        requested_by: c.text(4, "requested_by")?,
        status: c.text(5, "status")?,
        decision_id: DecisionId(c.int(6, "decision_id")?),
    };
    Ok((row, c.malformed))
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
