//! Reads of a PostgreSQL ledger: keyset pages and streams of operations for
//! a filter, counts (the All total is an estimate on a large ledger), and
//! the resolution of a spec to an id. They return exactly what
//! [`crate::store::sqlite`] returns for the same ledger (`same_contract`
//! tests both). Every page seeks on `(sort column, id)`, never OFFSET; the
//! list's attempt count, last error and last event, which SQLite keeps in a
//! derived table, are computed for the page's rows only (LATERAL through
//! `events (op_id, id)` and the attempts primary key). One operation's
//! history and the audit trail are in [`super::history`], the filter's SQL
//! in [`super::filter`]; no statement here writes.

use chrono::{DateTime, Utc};
use postgres::Row;

use super::cells::Cells;
use super::conn::Pg;
use super::filter::{
    Params, param, queue_candidates_sql, refs, stale_sql, where_clause, where_sql, whole_seconds,
};
use crate::domain::{
    OperationId, OperationRow, Seek, Sort, SortColumn, SortKey, SortValue, State, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::Query;

/// Above this many operations (the server's estimate), the header's counts
/// of the states outside the queue, and the total, are estimates from the
/// planner's statistics: an exact `GROUP BY` over ten million rows takes
/// seconds, and those numbers only say how big the ledger is. The queue's
/// states are always counted, through the partial queue index.
const EXACT_COUNTS_UP_TO: i64 = 1_000_000;

/// A list row: the operation's columns, and its attempt count, last event
/// and last error, each computed for this row alone.
const ROW_SOURCE: &str = "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    n.attempts, o.max_attempts, ev.event, le.error,
    o.result_id, o.lease_expires_at, o.created_at, o.updated_at, o.version,
    CASE WHEN o.state = 'retry_pending' THEN (SELECT r.status FROM retry_requests r
        WHERE r.op_id = o.id ORDER BY r.id DESC LIMIT 1) END
    FROM operations o
    CROSS JOIN LATERAL (SELECT count(*) AS attempts FROM attempts a WHERE a.op_id = o.id) n
    LEFT JOIN LATERAL (SELECT a.error FROM attempts a WHERE a.op_id = o.id
        ORDER BY a.attempt DESC LIMIT 1) le ON true
    LEFT JOIN LATERAL (SELECT e.event FROM events e WHERE e.op_id = o.id
        ORDER BY e.id DESC LIMIT 1) ev ON true";

/// The expression a sort orders by, never NULL (a row compared with NULL
/// is neither before nor after it, and the page would lose the row). Text
/// sorts byte by byte as on SQLite, not by the database's locale.
fn sort_sql(column: SortColumn) -> &'static str {
    match column {
        SortColumn::Id => "o.id",
        SortColumn::Created => "o.created_at",
        SortColumn::Updated => "o.updated_at",
        SortColumn::Account => "o.account COLLATE \"C\"",
        SortColumn::OpType => "o.op_type COLLATE \"C\"",
        SortColumn::Attempts => "n.attempts",
        SortColumn::LastEvent => "coalesce(ev.event, '') COLLATE \"C\"",
    }
}

/// A seek key's value as a parameter of the sort column's type. A time
/// key is the text a row showed ([`super::cells::time_text`]), read back
/// by the server.
fn sort_param(column: SortColumn, value: SortValue, values: &mut Params) -> String {
    match value {
        SortValue::Int(n) => param(values, n),
        SortValue::Text(t) => {
            let p = param(values, t);
            match column {
                SortColumn::Created | SortColumn::Updated => format!("{p}::text::timestamptz"),
                _ => format!("{p}::text"),
            }
        }
    }
}

/// The direction to read in, whether the rows must be reversed into list
/// order, and the comparison that keeps the rows beyond the seek key (as
/// SQLite's pages do).
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

impl Pg {
    /// One page of operations matching `query`, newest first.
    pub fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let seek = seek.map(|id| SortKey {
            value: SortValue::Int(id.0),
            id,
        });
        self.sorted_page(query, Sort::default(), seek, limit, now)
    }

    /// One page of operations matching `query` in `sort`'s order, ties
    /// broken by id; `seek` is a row's [`Sort::key_of`] in that same order.
    pub fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        self.fresh()?;
        let (sql, values, reverse) = page_sql(query, sort, seek, Some(limit), now);
        let failed = |e| self.err("listing operations", e);
        let rows = self
            .client
            .borrow_mut()
            .query(&sql, &refs(&values))
            .map_err(failed)?;
        let mut rows = rows
            .iter()
            .map(operation_row)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(failed)?;
        if reverse {
            rows.reverse();
        }
        Ok(rows)
    }

    /// Every operation matching `query`, newest first, handed to `each`.
    pub fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.for_each_sorted_row(query, Sort::default(), now, each)
    }

    /// [`Pg::for_each_row`] in `sort`'s order: one statement read through a
    /// portal a batch at a time, so a ten-million-row ledger is never held
    /// in memory; `each` returning an error stops the read.
    pub fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        now: DateTime<Utc>,
        mut each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.fresh()?;
        const BATCH: i32 = 500;
        let (sql, values, _) = page_sql(query, sort, Seek::First, None, now);
        let failed = |e| self.err("listing operations", e);
        let mut client = self.client.borrow_mut();
        // A portal lives in a transaction; read-only, so it never holds a
        // lock a writer waits for.
        let mut tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .map_err(failed)?;
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(failed)?;
        let portal = tx.bind(&sql, &refs(&values)).map_err(failed)?;
        let mut n = 0;
        loop {
            let rows = tx.query_portal(&portal, BATCH).map_err(failed)?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                each(operation_row(row).map_err(failed)?)?;
                n += 1;
            }
        }
        tx.commit().map_err(failed)?;
        Ok(n)
    }

    /// How many operations match `query`: exact, so it may scan; callers
    /// on the screen path run it off the UI thread, and the statement
    /// timeout bounds it.
    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        self.fresh()?;
        let mut values = Params::new();
        let clause = where_clause(query, now, &mut values);
        let sql = format!("SELECT count(*) FROM operations o {}", where_sql(&clause));
        self.client
            .borrow_mut()
            .query_one(&sql, &refs(&values))
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.err("counting operations", e))
    }

    /// Operations per state. The queue's states and the stale reservations
    /// are always exact (the partial queue index holds them); on a ledger
    /// above [`EXACT_COUNTS_UP_TO`] the other states and the total come
    /// from the planner's statistics and say so (`estimated`).
    pub fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        self.fresh()?;
        self.state_counts_up_to(now, EXACT_COUNTS_UP_TO)
    }

    /// [`Pg::state_counts`], counting exactly up to `exact_up_to` rows.
    pub(super) fn state_counts_up_to(
        &self,
        now: DateTime<Utc>,
        exact_up_to: i64,
    ) -> Result<StateCounts> {
        let failed = |e| self.err("counting states", e);
        let mut client = self.client.borrow_mut();
        let size: i64 = client
            .query_one(
                "SELECT CASE WHEN c.relpages > 0
                     THEN (c.reltuples / c.relpages
                           * (pg_relation_size(c.oid) / current_setting('block_size')::int))::bigint
                     ELSE c.reltuples::bigint END
                 FROM pg_class c WHERE c.oid = to_regclass('operations')",
                &[],
            )
            .and_then(|r| r.try_get(0))
            .map_err(failed)?;
        // The most common values and their share, which ANALYZE keeps; a
        // rare state outside the queue may be missing: an estimate. Never
        // analysed (no statistics): counted.
        let mut others: Vec<(String, i64)> = Vec::new();
        if size > exact_up_to {
            let rows = client
                .query(
                    "SELECT u.v, u.f FROM pg_stats s,
                         unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS u(v, f)
                     WHERE s.schemaname = current_schema() AND s.tablename = 'operations'
                       AND s.attname = 'state'",
                    &[],
                )
                .map_err(failed)?;
            for row in rows {
                let word: String = row.try_get(0).map_err(failed)?;
                let share: f32 = row.try_get(1).map_err(failed)?;
                if !is_queue_candidate(&State::parse(&word)) {
                    others.push((word, (f64::from(share) * size as f64).round() as i64));
                }
            }
        }
        let estimated = !others.is_empty();
        let exact = if estimated {
            format!(
                "SELECT state, count(*) FROM operations o WHERE {} GROUP BY state",
                queue_candidates_sql("o.state")
            )
        } else {
            "SELECT state, count(*) FROM operations GROUP BY state".to_string()
        };
        let mut raw = others;
        for row in client.query(&exact, &[]).map_err(failed)? {
            let mut c = Cells::new(&row);
            raw.push((
                c.text(0, "state").map_err(failed)?,
                c.int(1, "n").map_err(failed)?,
            ));
        }
        let mut by_state: Vec<(State, i64)> = raw
            .into_iter()
            .filter(|(_, n)| *n != 0)
            .map(|(s, n)| (State::parse(&s), n))
            .collect();
        by_state.sort_by_key(|(s, _)| {
            State::KNOWN
                .iter()
                .position(|k| k == s)
                .unwrap_or(State::KNOWN.len())
        });
        let stale_reserved: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM operations o WHERE {} AND {}",
                    queue_candidates_sql("o.state"),
                    stale_sql("o.", "$1")
                ),
                &[&whole_seconds(now)],
            )
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.err("counting stale reservations", e))?;
        let total = by_state.iter().map(|(_, n)| n).sum();
        Ok(StateCounts {
            by_state,
            stale_reserved,
            total,
            estimated,
        })
    }

    /// Finds an operation by id (`42`) or natural key (`account/op_type/key`;
    /// the key may itself contain `/`).
    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        self.fresh()?;
        let not_found = || Error::NotFound {
            path: self.shown.clone(),
            what: format!("{spec:?}"),
        };
        let failed = |e| self.err("finding the operation", e);
        let mut client = self.client.borrow_mut();
        if let Ok(id) = spec.trim().parse::<i64>() {
            let found = client
                .query_opt("SELECT id FROM operations WHERE id = $1", &[&id])
                .map_err(failed)?;
            return match found {
                Some(_) => Ok(OperationId(id)),
                None => Err(not_found()),
            };
        }
        let mut parts = spec.splitn(3, '/');
        let (Some(account), Some(op_type), Some(key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::Usage(format!(
                "{spec:?} is neither an operation id nor account/op_type/key"
            )));
        };
        // Every match, not the first: a service's table without the UNIQUE
        // constraint may hold two, and guessing would decide on the wrong one.
        let ids = client
            .query(
                "SELECT id FROM operations WHERE account = $1 AND op_type = $2 AND idem_key = $3
                 ORDER BY id",
                &[&account, &op_type, &key],
            )
            .map_err(failed)?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<std::result::Result<Vec<i64>, _>>()
            .map_err(failed)?;
        match ids[..] {
            [] => Err(not_found()),
            [id] => Ok(OperationId(id)),
            _ => Err(Error::Ambiguous {
                path: self.shown.clone(),
                spec: spec.to_string(),
                ids: ids.into_iter().map(OperationId).collect(),
            }),
        }
    }

    /// The id of the operation with this natural key, if the ledger holds it.
    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        self.fresh()?;
        self.client
            .borrow_mut()
            .query_opt(
                "SELECT id FROM operations WHERE account = $1 AND op_type = $2 AND idem_key = $3
                 ORDER BY id LIMIT 1",
                &[&account, &op_type, &key],
            )
            .and_then(|row| row.map(|r| r.try_get(0)).transpose())
            .map(|id| id.map(OperationId))
            .map_err(|e| self.err("finding an operation by its key", e))
    }
}

/// The statement, its parameters and whether to reverse the rows, for a
/// page (`limit`) or the whole list (`None`).
fn page_sql(
    query: &Query,
    sort: Sort,
    seek: Seek<SortKey>,
    limit: Option<usize>,
    now: DateTime<Utc>,
) -> (String, Params, bool) {
    let mut values = Params::new();
    let mut clause = where_clause(query, now, &mut values);
    let (order, reverse, bound) = seek_plan(seek, sort.descending);
    let column = sort_sql(sort.column);
    if let Some((key, op)) = bound {
        let id = param(&mut values, key.id.0);
        if sort.column == SortColumn::Id {
            // The id alone: the plain form the primary key and the partial
            // queue index serve.
            clause.push(format!("o.id {op} {id}"));
        } else {
            let value = sort_param(sort.column, key.value, &mut values);
            clause.push(format!("({column}, o.id) {op} ({value}, {id})"));
        }
    }
    let limit = match limit {
        Some(n) => format!(
            " LIMIT {}",
            param(&mut values, n.min(i64::MAX as usize) as i64)
        ),
        None => String::new(),
    };
    let by = if sort.column == SortColumn::Id {
        format!("o.id {order}")
    } else {
        format!("{column} {order}, o.id {order}")
    };
    let sql = format!("{ROW_SOURCE} {} ORDER BY {by}{limit}", where_sql(&clause));
    (sql, values, reverse)
}

/// A state the partial queue index holds (the queue's, and reserved).
fn is_queue_candidate(state: &State) -> bool {
    State::QUEUE.contains(state) || *state == State::Reserved
}

/// A list row, read cell by cell so a malformed one is flagged on the row
/// instead of failing the page (see [`super::cells`]).
fn operation_row(r: &Row) -> std::result::Result<OperationRow, postgres::Error> {
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
        retry_status: c.opt_text(14, "retry_requests.status")?,
        malformed: c.malformed,
    })
}
