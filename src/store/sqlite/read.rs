//! Reads: pages and streams of operations for a filter, counts, and the
//! resolution of a spec to an id. Every list is a bounded page found
//! by keyset pagination on `(sort column, id)` ([`Sort`]), never OFFSET or
//! a full load; the default id order and the account and op type orders
//! walk an index, the others sort the filter's matches. One
//! operation's history and the audit trail are in [`history`], the filter's
//! SQL in [`filter`]; no statement here writes.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Row, params, params_from_iter};

use super::conn::Sqlite;
use crate::domain::{
    OperationId, OperationRow, Seek, Sort, SortColumn, SortKey, SortValue, State, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::Query;

mod cells;
mod clusters;
mod filter;
mod history;
use cells::Cells;
pub(super) use filter::{STALE_CANDIDATES, instant_sql, queue_candidates_sql};
use filter::{where_clause, where_sql};
pub(super) use history::load_detail;
// The age buckets are counted the same way on PostgreSQL.

/// A list row from the derived summary that triggers keep current: one
/// primary-key lookup per row.
const ROW_SOURCE: &str = "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    coalesce(s.attempts, 0), o.max_attempts, s.last_event, s.last_error,
    o.result_id, CAST(o.lease_expires_at AS TEXT), o.created_at, o.updated_at, o.version,
    CASE WHEN o.state = 'retry_pending' THEN (SELECT r.status FROM retry_requests r
        WHERE r.op_id = o.id ORDER BY r.id DESC LIMIT 1) END
    FROM operations o LEFT JOIN settle_op_summary s ON s.op_id = o.id";

/// The same row for a ledger shown read-only without adopting it (no
/// summary table): three subqueries per row, still bounded by the page.
const ROW_SOURCE_UNADOPTED: &str = "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    (SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id),
    o.max_attempts,
    (SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1),
    (SELECT a.error FROM attempts a WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1),
    o.result_id, CAST(o.lease_expires_at AS TEXT), o.created_at, o.updated_at, o.version,
    NULL
    FROM operations o";

/// The direction to read in, whether the rows must be reversed into list
/// order, and the comparison that keeps the rows beyond the seek key.
fn seek_plan<K>(
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

/// The expression a sort orders by. Never NULL (a row value compared with
/// NULL is neither before nor after, and the page would lose the row);
/// read from the trigger-kept summary when it is there.
fn sort_sql(column: SortColumn, derived: bool) -> &'static str {
    match (column, derived) {
        (SortColumn::Id, _) => "o.id",
        (SortColumn::Created, _) => "o.created_at",
        (SortColumn::Updated, _) => "o.updated_at",
        (SortColumn::Account, _) => "o.account",
        (SortColumn::OpType, _) => "o.op_type",
        (SortColumn::Attempts, true) => "coalesce(s.attempts, 0)",
        (SortColumn::Attempts, false) => "(SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id)",
        (SortColumn::LastEvent, true) => "coalesce(s.last_event, '')",
        (SortColumn::LastEvent, false) => {
            "coalesce((SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1), '')"
        }
    }
}

fn sort_value(value: SortValue) -> Value {
    match value {
        SortValue::Int(n) => Value::Integer(n),
        SortValue::Text(t) => Value::Text(t),
    }
}

impl Sqlite {
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
        let (sql, values, reverse) = self.page_sql(query, sort, seek, Some(limit), now);
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
        each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.for_each_sorted_row(query, Sort::default(), now, each)
    }

    /// [`Sqlite::for_each_row`] in `sort`'s order (`settle list --sort`).
    pub fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        now: DateTime<Utc>,
        mut each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        let (sql, values, _) = self.page_sql(query, sort, Seek::First, None, now);
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
        sort: Sort,
        seek: Seek<SortKey>,
        limit: Option<usize>,
        now: DateTime<Utc>,
    ) -> (String, Vec<Value>, bool) {
        let (mut clause, mut values) = where_clause(query, now, self.derived);
        let (order, reverse, bound) = seek_plan(seek, sort.descending);
        let column = sort_sql(sort.column, self.derived);
        if let Some((key, op)) = bound {
            values.push(Value::Integer(key.id.0));
            let id = values.len();
            if sort.column == SortColumn::Id {
                // The id alone: the plain form every index ending in id
                // serves (the plan tests hold this).
                clause.push(format!("o.id {op} ?{id}"));
            } else {
                values.push(sort_value(key.value));
                clause.push(format!("({column}, o.id) {op} (?{}, ?{id})", values.len()));
            }
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
        let by = if sort.column == SortColumn::Id {
            format!("o.id {order}")
        } else {
            format!("{column} {order}, o.id {order}")
        };
        let sql = format!("{source} {} ORDER BY {by}{limit}", where_sql(&clause));
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
            estimated: false,
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
        retry_status: c.opt_text(14, "retry_requests.status")?,
        malformed: c.malformed,
    })
}
