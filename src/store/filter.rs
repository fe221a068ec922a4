//! What a filter means as SQL, once for both backends: the conditions a
//! [`Query`] becomes, the keyset page that reads them in a sort's order,
//! the count and the Clusters view's statement. Each condition is asked of
//! the backend's [`Dialect`] for its spelling, and written so an index
//! ending in `id` serves it (the SQLite plan tests hold this). Values go
//! into [`Args`], never into the SQL text. Builds text only; runs nothing.

use chrono::{DateTime, Utc};

use super::sql::{Arg, Args, Dialect, TextTerm};
use crate::domain::{Seek, Sort, SortColumn, SortKey, SortValue, State};
use crate::query::{Pattern, Query};

/// A statement and its arguments.
pub(crate) struct Statement {
    pub sql: String,
    pub args: Vec<Arg>,
}

/// The conditions on `operations o` a filter means, all of which must
/// hold, with their arguments pushed onto `args`.
pub(super) fn where_clause(
    d: &dyn Dialect,
    query: &Query,
    now: DateTime<Utc>,
    args: &mut Args,
) -> Vec<String> {
    conditions(d, query, now, args, false)
}

/// [`where_clause`], less the queue's membership where `driven` (a
/// [`queue_join`] reads the rows from the members).
fn conditions(
    d: &dyn Dialect,
    query: &Query,
    now: DateTime<Utc>,
    args: &mut Args,
    driven: bool,
) -> Vec<String> {
    let members = || if driven { None } else { d.queue_members() };
    let mut clause = Vec::new();
    if query.queue {
        // The candidates term is repeated verbatim so the partial queue
        // index (already in id order) serves the page.
        let now = args.push(Arg::now(now));
        clause.push(d.queue_candidates("o.state"));
        clause.extend(members());
        clause.push(format!(
            "(o.state <> 'reserved' OR {})",
            d.lease_passed("o.lease_expires_at", &now)
        ));
    }
    for states in &query.states {
        let list: Vec<String> = states.iter().map(|s| args.text(s.as_str())).collect();
        // One state: its run of the state index is in id order. Several:
        // walking the id order and filtering beats reading each state's
        // run and sorting them all.
        let column = if list.len() > 1 {
            d.unindexed("o.state")
        } else {
            "o.state".to_string()
        };
        clause.push(format!("{column} IN ({})", list.join(", ")));
        if states.iter().all(is_queue_candidate) {
            clause.extend(members());
        }
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
                .map(|p| pattern_sql(d, column, p, args))
                .collect();
            clause.push(format!("({})", alternatives.join(" OR ")));
        }
    }
    // `ledger:` names a group's ledgers (stripped there): one alone is none.
    clause.extend((!query.ledgers.is_empty()).then(|| "1 = 0".to_string()));
    for (cmp, n) in &query.attempts {
        let p = args.int(*n);
        clause.push(format!("{} {} {p}", d.attempts(), cmp.sql()));
    }
    for text in &query.errors {
        clause.extend(d.text_candidates(TextTerm::Error, text, args));
        let p = args.text(like_contains(text));
        clause.push(format!(
            "EXISTS (SELECT 1 FROM {} WHERE a.op_id = o.id AND {})",
            d.attempt_errors(),
            d.contains("a.error", &p)
        ));
    }
    for text in &query.text {
        clause.extend(d.text_candidates(TextTerm::Free, text, args));
        let p = args.text(like_contains(text));
        let mut alternatives: Vec<String> = ["o.account", "o.op_type", "o.idem_key", "o.result_id"]
            .iter()
            .map(|column| d.contains(column, &p))
            .collect();
        if let Ok(id) = text.trim().trim_start_matches('#').parse::<i64>() {
            alternatives.push(format!("o.id = {}", args.int(id)));
        }
        clause.push(format!("({})", alternatives.join(" OR ")));
    }
    clause
}

/// The states an operation in the triage queue can have, and reserved, as
/// SQL constants (`'pending'`, …): the partial queue indexes and the
/// queries they serve spell them alike, never as parameters, because a
/// planner uses a partial index only when it can prove the query implies
/// the index's condition.
pub(super) fn queue_candidate_constants() -> Vec<String> {
    State::QUEUE
        .iter()
        .chain([State::Reserved].iter())
        .map(|s| format!("'{}'", s.as_str().replace('\'', "''")))
        .collect()
}

/// [`queue_candidate_constants`] as one list, `'pending', …`.
pub(super) fn queue_candidate_words() -> String {
    queue_candidate_constants().join(", ")
}

/// A state of [`queue_candidate_constants`].
pub(crate) fn is_queue_candidate(state: &State) -> bool {
    State::QUEUE.contains(state) || *state == State::Reserved
}

/// Whether `query`'s rows are read from the backend's own queue table
/// ([`Dialect::queue_join`]): it asks for the queue, or only for states of
/// it, and no index of the ledger's serves it better (an account's, whose
/// rows are few, each checked against the table by its key).
fn queue_driven(d: &dyn Dialect, query: &Query) -> bool {
    let members = query.queue
        || query
            .states
            .iter()
            .any(|states| states.iter().all(is_queue_candidate));
    members && query.accounts.is_empty() && d.queue_join("ASC", None).is_some()
}

/// `from` with the queue's join where the query is [`queue_driven`].
fn driven_from(
    d: &dyn Dialect,
    driven: bool,
    from: &str,
    order: &str,
    bound: Option<(&str, &str)>,
) -> String {
    match driven.then(|| d.queue_join(order, bound)).flatten() {
        // The row source's FROM names the operations first.
        Some(join) => from.replacen(
            &format!("FROM {}", d.from()),
            &format!("FROM {} {join}", d.from()),
            1,
        ),
        None => from.to_string(),
    }
}

pub(super) fn where_sql(clause: &[String]) -> String {
    if clause.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clause.join(" AND "))
    }
}

/// One value of an `account:`/`type:`/`key:` term as SQL. A glob gets an
/// explicit byte-order range over its literal prefix, so the column's
/// index finds the matches, whatever the pattern.
fn pattern_sql(d: &dyn Dialect, column: &str, pattern: &Pattern, args: &mut Args) -> String {
    let bytewise = d.bytewise(column);
    match pattern {
        // Byte by byte, as SQLite compares; said in the column's own
        // collation too where that is another, since an index serves only a
        // comparison in its own collation, and a service's database indexes
        // in its default one. Under any deterministic collation the two
        // agree on equality.
        Pattern::Exact(v) => {
            let p = args.text(v.as_str());
            if bytewise == column {
                format!("{column} = {p}")
            } else {
                format!("({column} = {p} AND {bytewise} = {p})")
            }
        }
        Pattern::Glob(v) => {
            let (operator, value) = d.glob(v);
            let glob = format!("{column} {operator} {}", args.text(value));
            match prefix_range(v) {
                Some((low, high)) => format!(
                    "({bytewise} >= {} AND {bytewise} < {} AND {glob})",
                    args.text(low),
                    args.text(high),
                ),
                None => glob,
            }
        }
    }
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

/// Escapes `LIKE`'s metacharacters in `text` with a backslash.
pub(super) fn like_literal(text: &str, out: &mut String) {
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// A `LIKE` pattern for text holding `text`.
fn like_contains(text: &str) -> String {
    let mut out = String::from("%");
    like_literal(text, &mut out);
    out.push('%');
    out
}

/// The direction to read in, whether the rows must be reversed into list
/// order, and the comparison that keeps the rows beyond the seek key.
pub(super) fn seek_plan<K>(
    seek: Seek<K>,
    descending: bool,
) -> (&'static str, bool, Option<(K, &'static str)>) {
    let (forward, backward) = if descending {
        ("DESC", "ASC")
    } else {
        ("ASC", "DESC")
    };
    let (after, before) = if descending { ("<", ">") } else { (">", "<") };
    match seek {
        Seek::First => (forward, false, None),
        Seek::After(key) => (forward, false, Some((key, after))),
        Seek::Before(key) => (backward, true, Some((key, before))),
        Seek::Last => (backward, true, None),
    }
}

/// The statement of a page (`limit`) or of the whole list (`None`) in
/// `sort`'s order after `seek`, and whether to reverse its rows. A keyset
/// on `(sort expression, id)`, never OFFSET.
pub(super) fn page_sql(
    d: &dyn Dialect,
    query: &Query,
    sort: Sort,
    seek: Seek<SortKey>,
    limit: Option<usize>,
    now: DateTime<Utc>,
) -> (Statement, bool) {
    let mut args = Args::new(d);
    let driven = queue_driven(d, query);
    let mut clause = conditions(d, query, now, &mut args, driven);
    let source = if clause.is_empty() && !driven {
        d.unfiltered_row_source()
    } else {
        d.row_source()
    };
    let (order, reverse, bound) = seek_plan(seek, sort.descending);
    let column = d.sort(sort.column);
    let mut id_bound = None;
    if let Some((key, op)) = bound {
        let id = args.int(key.id.0);
        if sort.column == SortColumn::Id {
            // The id alone: the plain form the primary key and every index
            // ending in id serve.
            clause.push(format!("o.id {op} {id}"));
            id_bound = Some((op, id));
        } else {
            let value = match key.value {
                SortValue::Int(n) => args.int(n),
                SortValue::Text(t) => d.sort_text(sort.column, args.text(t)),
            };
            clause.push(format!("({column}, o.id) {op} ({value}, {id})"));
        }
    }
    let source = driven_from(
        d,
        driven,
        source,
        order,
        id_bound.as_ref().map(|(op, id)| (*op, id.as_str())),
    );
    let limit = match limit {
        Some(n) => format!(" LIMIT {}", args.int(n.min(i64::MAX as usize) as i64)),
        None => String::new(),
    };
    let by = if sort.column == SortColumn::Id {
        format!("o.id {order}")
    } else {
        format!("{column} {order}, o.id {order}")
    };
    let sql = format!("{source} {} ORDER BY {by}{limit}", where_sql(&clause));
    let statement = Statement {
        sql,
        args: args.values,
    };
    (statement, reverse)
}

/// The matches of `query` among the ids in `range` (above `range.0`, up
/// to and including `range.1`), newest first, at most `limit`: the id range bounds the statement
/// through the primary key whatever the filter, so where no index serves
/// the filter it reads one slice of the ledger, never all of it.
pub(super) fn range_sql(
    d: &dyn Dialect,
    query: &Query,
    range: (i64, i64),
    limit: usize,
    now: DateTime<Utc>,
) -> Statement {
    let mut args = Args::new(d);
    let mut clause = where_clause(d, query, now, &mut args);
    clause.push(format!(
        "o.id > {} AND o.id <= {}",
        args.int(range.0),
        args.int(range.1)
    ));
    let limit = args.int(limit.min(i64::MAX as usize) as i64);
    Statement {
        sql: format!(
            "{} {} ORDER BY o.id DESC LIMIT {limit}",
            d.row_source(),
            where_sql(&clause)
        ),
        args: args.values,
    }
}

/// The highest operation id (`highest`), or the lowest: one step down the
/// primary key.
pub(super) fn id_end_sql(d: &dyn Dialect, highest: bool) -> Statement {
    let order = if highest { "DESC" } else { "ASC" };
    Statement {
        // The dialect's relation: a job queue has no `operations` table.
        sql: format!(
            "SELECT id FROM {} ORDER BY id {order} LIMIT 1",
            d.operations()
        ),
        args: Vec::new(),
    }
}

/// How many operations `query` matches.
pub(super) fn count_sql(d: &dyn Dialect, query: &Query, now: DateTime<Utc>) -> Statement {
    let mut args = Args::new(d);
    let driven = queue_driven(d, query);
    let clause = conditions(d, query, now, &mut args, driven);
    let from = driven_from(d, driven, &format!("FROM {}", d.from()), "ASC", None);
    Statement {
        sql: format!("SELECT count(*) {from} {}", where_sql(&clause)),
        args: args.values,
    }
}

/// Each operation `query` matches as the Clusters view counts it: type,
/// account, last error and when it got stuck ([`Dialect::stuck_since`],
/// whole seconds since the epoch; NULL when not a time), in id order so
/// the same index as the queue's pages serves it.
pub(super) fn clusters_sql(d: &dyn Dialect, query: &Query, now: DateTime<Utc>) -> Statement {
    let mut args = Args::new(d);
    let driven = queue_driven(d, query);
    let clause = conditions(d, query, now, &mut args, driven);
    let sql = format!(
        "SELECT o.op_type, o.account, {}, {} {} {} ORDER BY o.id",
        d.last_error(),
        d.epoch_seconds(d.stuck_since()),
        driven_from(d, driven, &format!("FROM {}", d.from()), "ASC", None),
        where_sql(&clause)
    );
    Statement {
        sql,
        args: args.values,
    }
}
