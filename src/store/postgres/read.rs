//! Reads of a PostgreSQL ledger: keyset pages and streams of operations for
//! a filter, counts (the All total is an estimate on a large ledger), and
//! the resolution of a spec to an id, through the shared statements of
//! [`crate::store::filter`] and [`crate::store::detail`] in PostgreSQL's
//! spelling ([`PgSql`]). They return exactly what [`crate::store::sqlite`]
//! returns for the same ledger (`same_contract` tests both). Every page
//! seeks on `(sort column, id)`, never OFFSET. One operation's history and
//! the audit trail are in [`super::history`]; no statement here writes.

use chrono::{DateTime, Utc};

use super::cells::Cells;
use super::conn::Pg;
use super::filter::{PgSql, queue_candidates_sql, refs, stale_sql};
use crate::domain::{
    OperationId, OperationRow, Seek, Sort, SortKey, SortValue, State, StateCounts,
};
use crate::error::Result;
use crate::query::Query;
use crate::store::cells::CellRead;
use crate::store::detail;
use crate::store::filter::{Statement, count_sql, page_sql};
use crate::store::rows;
use crate::store::sql::whole_seconds;

/// Above this many operations (the server's estimate), the header's counts
/// of the states outside the queue, and the total, are estimates from the
/// planner's statistics: an exact `GROUP BY` over ten million rows takes
/// seconds, and those numbers only say how big the ledger is. The queue's
/// states are always counted, through the partial queue index.
const EXACT_COUNTS_UP_TO: i64 = 1_000_000;

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
        let (page, reverse) = page_sql(&PgSql, query, sort, seek, Some(limit), now);
        let failed = |e| self.err("listing operations", e);
        let rows = self
            .client
            .borrow_mut()
            .query(&page.sql, &refs(&page.args))
            .map_err(failed)?;
        let mut rows = rows
            .iter()
            .map(|row| rows::operation_row(&mut Cells::new(row)))
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
        let (list, _) = page_sql(&PgSql, query, sort, Seek::First, None, now);
        let mut n = 0;
        let portal = Portal {
            batch: 500,
            untimed: true,
        };
        self.stream(&list, portal, "listing operations", |c| {
            let row = rows::operation_row(c).map_err(|e| self.err("listing operations", e))?;
            each(row)?;
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Hands each row of `statement` to `each`, read through a portal
    /// `portal.batch` rows at a time. A portal lives in a transaction;
    /// read-only, so it never holds a lock a writer waits for.
    pub(super) fn stream(
        &self,
        statement: &Statement,
        portal: Portal,
        doing: &str,
        mut each: impl FnMut(&mut Cells<'_>) -> Result<()>,
    ) -> Result<()> {
        let failed = |e| self.err(doing, e);
        let mut client = self.client.borrow_mut();
        let mut tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .map_err(failed)?;
        if portal.untimed {
            tx.batch_execute("SET LOCAL statement_timeout = 0")
                .map_err(failed)?;
        }
        let bound = tx
            .bind(&statement.sql, &refs(&statement.args))
            .map_err(failed)?;
        loop {
            let rows = tx.query_portal(&bound, portal.batch).map_err(failed)?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                each(&mut Cells::new(row))?;
            }
        }
        tx.commit().map_err(failed)
    }

    /// How many operations match `query`: exact, so it may scan; callers
    /// on the screen path run it off the UI thread, and the statement
    /// timeout bounds it.
    pub fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        self.fresh()?;
        let count = count_sql(&PgSql, query, now);
        self.client
            .borrow_mut()
            .query_one(&count.sql, &refs(&count.args))
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
        let others = self.estimated_counts(exact_up_to)?;
        let estimated = !others.is_empty();
        let exact = if estimated {
            format!(
                "SELECT state, count(*) FROM operations o WHERE {} GROUP BY state",
                queue_candidates_sql("o.state")
            )
        } else {
            "SELECT state, count(*) FROM operations GROUP BY state".to_string()
        };
        let mut client = self.client.borrow_mut();
        let mut raw = others;
        for row in client.query(&exact, &[]).map_err(failed)? {
            let mut c = Cells::new(&row);
            raw.push((
                c.text(0, "state").map_err(failed)?,
                c.int(1, "n").map_err(failed)?,
            ));
        }
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
        Ok(rows::state_counts(raw, stale_reserved, estimated))
    }

    /// On a ledger above `exact_up_to` rows (the server's estimate), the
    /// states outside the queue with their estimated counts: the most
    /// common values and their share, which ANALYZE keeps; a rare state
    /// may be missing. Empty when the ledger is smaller, or was never
    /// analysed (no statistics): then everything is counted.
    fn estimated_counts(&self, exact_up_to: i64) -> Result<Vec<(String, i64)>> {
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
        let mut others = Vec::new();
        if size <= exact_up_to {
            return Ok(others);
        }
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
        Ok(others)
    }

    /// Finds an operation by id (`42`) or natural key (`account/op_type/key`;
    /// the key may itself contain `/`).
    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        self.fresh()?;
        detail::resolve(
            &mut &mut *self.client.borrow_mut(),
            spec,
            &self.shown,
            |e| self.err("finding the operation", e),
        )
    }

    /// The id of the operation with this natural key, if the ledger holds it.
    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        self.fresh()?;
        detail::operation_by_key(&mut &mut *self.client.borrow_mut(), (account, op_type, key))
            .map_err(|e| self.err("finding an operation by its key", e))
    }
}

/// How a long read goes through a portal: `batch` rows at a time, and
/// `untimed` to lift the statement timeout (a whole list may take longer
/// than any one page should).
#[derive(Debug, Clone, Copy)]
pub(super) struct Portal {
    pub batch: i32,
    pub untimed: bool,
}

/// A state the partial queue index holds (the queue's, and reserved).
fn is_queue_candidate(state: &State) -> bool {
    State::QUEUE.contains(state) || *state == State::Reserved
}
