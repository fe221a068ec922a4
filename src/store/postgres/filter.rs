//! The SQL a filter becomes on PostgreSQL: the where clause with numbered
//! parameters (no value ever enters the SQL text), matching what
//! [`crate::store::sqlite`]'s filter matches row for row. Text compares as
//! SQLite's does, byte by byte (`COLLATE "C"`), whatever the database's
//! locale; `LIKE` is case-insensitive for ASCII only, as SQLite's is. Builds
//! text only; runs nothing.

use chrono::{DateTime, Utc};
use postgres::types::ToSql;

use crate::domain::State;
use crate::query::{Pattern, Query};

/// A statement's parameters, in `$n` order.
pub(super) type Params = Vec<Box<dyn ToSql + Sync>>;

/// The parameters as the client takes them.
pub(super) fn refs(values: &Params) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v.as_ref()).collect()
}

/// The states an operation in the triage queue can have, spelled with
/// constants (never parameters) exactly as the partial index
/// `settle_operations_queue` spells its condition: the planner uses a
/// partial index only when it can prove the query implies the condition.
pub(crate) fn queue_candidates_sql(column: &str) -> String {
    let words: Vec<String> = State::QUEUE
        .iter()
        .chain([State::Reserved].iter())
        .map(|s| format!("'{}'", s.as_str().replace('\'', "''")))
        .collect();
    format!("{column} IN ({})", words.join(", "))
}

/// A reserved operation whose lease has passed (or that has none: nobody
/// owns it), as [`crate::domain::stale_reservation`] judges it. `now` is a
/// placeholder for a `timestamptz` parameter.
pub(super) fn stale_sql(alias: &str, now: &str) -> String {
    format!(
        "({alias}state = 'reserved' AND ({alias}lease_expires_at IS NULL OR {alias}lease_expires_at <= {now}))"
    )
}

/// `now` in whole seconds: SQLite compares leases as epoch seconds, and a
/// lease within the current second must be stale on both backends alike.
pub(super) fn whole_seconds(now: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
}

pub(super) fn where_sql(clause: &[String]) -> String {
    if clause.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clause.join(" AND "))
    }
}

/// Turns a parsed filter into SQL conditions on `operations o`, with
/// numbered parameters pushed onto `values`.
pub(super) fn where_clause(query: &Query, now: DateTime<Utc>, values: &mut Params) -> Vec<String> {
    let mut clause = Vec::new();
    if query.queue {
        let now = param(values, whole_seconds(now));
        clause.push(queue_candidates_sql("o.state"));
        clause.push(format!(
            "(o.state <> 'reserved' OR o.lease_expires_at IS NULL OR o.lease_expires_at <= {now})"
        ));
    }
    for states in &query.states {
        let list: Vec<String> = states
            .iter()
            .map(|s| param(values, s.as_str().to_string()))
            .collect();
        clause.push(format!("o.state IN ({})", list.join(", ")));
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
                .map(|p| pattern_sql(column, p, values))
                .collect();
            clause.push(format!("({})", alternatives.join(" OR ")));
        }
    }
    for (cmp, n) in &query.attempts {
        let p = param(values, *n);
        clause.push(format!(
            "(SELECT count(*) FROM attempts a WHERE a.op_id = o.id) {} {p}",
            cmp.sql()
        ));
    }
    for text in &query.errors {
        let p = param(values, like_contains(text));
        clause.push(format!(
            "EXISTS (SELECT 1 FROM attempts a WHERE a.op_id = o.id AND {})",
            ascii_ilike("a.error", &p)
        ));
    }
    for text in &query.text {
        let p = param(values, like_contains(text));
        let mut alternatives: Vec<String> = ["o.account", "o.op_type", "o.idem_key", "o.result_id"]
            .iter()
            .map(|column| ascii_ilike(column, &p))
            .collect();
        if let Ok(id) = text.trim().trim_start_matches('#').parse::<i64>() {
            let id = param(values, id);
            alternatives.push(format!("o.id = {id}"));
        }
        clause.push(format!("({})", alternatives.join(" OR ")));
    }
    clause
}

/// SQLite's `LIKE`: case-insensitive for ASCII letters only. Under the "C"
/// collation PostgreSQL folds exactly those, whatever the database's locale.
fn ascii_ilike(column: &str, pattern: &str) -> String {
    format!("{column} COLLATE \"C\" ILIKE {pattern}")
}

/// The range `[low, high)` every match of a `*` pattern lies in, in byte
/// order: its text before the first wildcard, and that text with its last
/// character advanced. `None` when the pattern starts with `*`.
fn prefix_range(pattern: &str) -> Option<(String, String)> {
    let literal = pattern.split('*').next().unwrap_or_default();
    let mut chars: Vec<char> = literal.chars().collect();
    let last = chars.pop()?;
    let next = char::from_u32(last as u32 + 1)?;
    let high: String = chars.iter().chain([next].iter()).collect();
    Some((literal.to_string(), high))
}

/// Escapes `LIKE`'s metacharacters in `text`.
fn like_literal(text: &str, out: &mut String) {
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

fn like_contains(text: &str) -> String {
    let mut out = String::from("%");
    like_literal(text, &mut out);
    out.push('%');
    out
}

/// A `*` pattern as a case-sensitive `LIKE` (SQLite's GLOB with only `*`
/// special, as the SQLite filter escapes the rest).
fn glob_like(pattern: &str) -> String {
    let mut out = String::new();
    for (i, part) in pattern.split('*').enumerate() {
        if i > 0 {
            out.push('%');
        }
        like_literal(part, &mut out);
    }
    out
}

/// One value of an `account:`/`type:`/`key:` term as SQL. A glob gets an
/// explicit byte-order range over its literal prefix, so an index on the
/// column (`COLLATE "C"`) finds the matches, whatever the pattern.
fn pattern_sql(column: &str, pattern: &Pattern, values: &mut Params) -> String {
    match pattern {
        // Equality means the same under any deterministic collation; said
        // in "C", the one index per column (`COLLATE "C"`) serves it too.
        Pattern::Exact(v) => format!("{column} COLLATE \"C\" = {}", param(values, v.clone())),
        Pattern::Glob(v) => {
            let like = format!("{column} LIKE {}", param(values, glob_like(v)));
            match prefix_range(v) {
                Some((low, high)) => format!(
                    "({column} COLLATE \"C\" >= {} AND {column} COLLATE \"C\" < {} AND {like})",
                    param(values, low),
                    param(values, high),
                ),
                None => like,
            }
        }
    }
}

/// Adds `v` to the statement's values and names its placeholder.
pub(super) fn param(values: &mut Params, v: impl ToSql + Sync + 'static) -> String {
    values.push(Box::new(v));
    format!("${}", values.len())
}
