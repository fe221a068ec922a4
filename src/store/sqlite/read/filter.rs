//! The SQL a filter becomes: the where clause with numbered parameters (no
//! value ever enters the SQL text), and the queue and stale-lease predicates
//! spelled from the domain's definitions, which the partial indexes repeat.
//! Builds text only; runs nothing.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;

use crate::domain::State;
use crate::query::{Pattern, Query};

/// The states an operation in the triage queue can have, as the partial
/// index `settle_operations_queue` and the queue predicate both spell it
/// (SQLite uses a partial index only when the query repeats its condition).
/// The unary `+` keeps the planner off `settle_operations_state`, which
/// would read the states one after the other and sort the whole queue.
pub(crate) fn queue_candidates_sql(column: &str) -> String {
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
pub(crate) const STALE_CANDIDATES: &str = "+state = 'reserved'";

/// A lease as seconds since the epoch, whatever form a service wrote it in:
/// RFC 3339 with any offset, SQLite's `datetime('now')` form, or epoch
/// seconds (a TEXT column stores them as digits: [`crate::domain::parse_time`]
/// reads the same forms). No lease is 0 (stale: nobody owns it, see
/// [`crate::domain::stale_reservation`]); text that is not a time is NULL
/// (never stale). The index `settle_operations_reserved_lease` is on this
/// exact expression.
pub(crate) fn instant_sql(column: &str) -> String {
    format!(
        "(CASE WHEN {column} IS NULL THEN 0 \
         WHEN typeof({column}) IN ('integer', 'real') \
           OR ({column} GLOB '[0-9]*' AND {column} NOT GLOB '*[^0-9.]*') \
           THEN CAST({column} AS INTEGER) \
         ELSE unixepoch({column}) END)"
    )
}

pub(super) fn where_sql(clause: &[String]) -> String {
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
pub(super) fn where_clause(
    query: &Query,
    now: DateTime<Utc>,
    derived: bool,
) -> (Vec<String>, Vec<Value>) {
    let mut clause = Vec::new();
    let mut values: Vec<Value> = Vec::new();
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
    for states in &query.states {
        let list: Vec<String> = states
            .iter()
            .map(|s| param(&mut values, Value::Text(s.as_str().to_string())))
            .collect();
        // One state: its run of settle_operations_state is in id order.
        // Several: walking the id order and filtering beats reading each
        // state's run and sorting them all (`+` keeps the index out).
        let plus = if list.len() > 1 { "+" } else { "" };
        clause.push(format!("{plus}o.state IN ({})", list.join(", ")));
    }
    for (column, terms) in [
        ("o.account", &query.accounts),
        ("o.op_type", &query.op_types),
        ("o.idem_key", &query.keys),
    ] {
        // Each term is its own condition (all must hold); a term's
        // comma-separated values are alternatives.
        for patterns in terms {
            let alternatives: Vec<String> = patterns
                .iter()
                .map(|p| pattern_sql(column, p, &mut values))
                .collect();
            clause.push(format!("({})", alternatives.join(" OR ")));
        }
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

/// One value of an `account:`/`type:`/`key:` term as SQL. A glob gets an
/// explicit range over its literal prefix, so the column's index finds the
/// matches, whatever the pattern.
fn pattern_sql(column: &str, pattern: &Pattern, values: &mut Vec<Value>) -> String {
    match pattern {
        Pattern::Exact(v) => format!("{column} = {}", param(values, Value::Text(v.clone()))),
        Pattern::Glob(v) => {
            let glob = format!(
                "{column} GLOB {}",
                param(values, Value::Text(glob_literal(v)))
            );
            match prefix_range(v) {
                Some((low, high)) => format!(
                    "({column} >= {} AND {column} < {} AND {glob})",
                    param(values, Value::Text(low)),
                    param(values, Value::Text(high)),
                ),
                None => glob,
            }
        }
    }
}

/// Adds `v` to the statement's values and names its placeholder.
fn param(values: &mut Vec<Value>, v: Value) -> String {
    values.push(v);
    format!("?{}", values.len())
}
