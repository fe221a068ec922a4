//! PostgreSQL's part of [`Reads`]: the keyset pages, streams, counts and
//! lookups the contract builds from the shared statements of
//! [`crate::store::filter`] and [`crate::store::detail`] in PostgreSQL's
//! spelling ([`PgSql`]), run here, and the state counts (the All total is
//! an estimate on a large ledger). They return exactly what [`crate::store::sqlite`]
//! returns for the same ledger (`same_contract` tests both). Every page
//! seeks on `(sort column, id)`, never OFFSET. One operation's history and
//! the audit trail are in [`super::history`]; no statement here writes.

use chrono::{DateTime, Utc};

use super::cells::Cells;
use super::conn::Pg;
use super::filter::{PgSql, refs, stale_sql};
use super::portal::Portal;
use crate::domain::{Clusters, OperationRow, State, StateCounts};
use crate::error::Result;
use crate::query::Query;
use crate::store::backend::Reads;
use crate::store::cells::CellRead;
use crate::store::filter::{Statement, is_queue_candidate};
use crate::store::rows;
use crate::store::sql::{Dialect, whole_seconds};

/// Above this many operations (the server's estimate), the header's counts
/// of the states outside the queue, and the total, are estimates from the
/// planner's statistics: an exact `GROUP BY` over ten million rows takes
/// seconds, and those numbers only say how big the ledger is. The queue's
/// states are always counted, through the partial queue index.
const EXACT_COUNTS_UP_TO: i64 = 1_000_000;

impl Pg {
    /// The spelling of this ledger's reads: what its schema holds.
    pub(super) fn spelling(&self) -> &'static PgSql {
        let spelling = PgSql {
            console: self.tables.console,
            events: self.events,
            queue: self.queue,
        };
        &PgSql::EVERY[spelling.index()]
    }
}

impl Reads for Pg {
    fn dialect(&self) -> &dyn Dialect {
        self.spelling()
    }

    fn operation_rows(&self, page: &Statement) -> Result<Vec<OperationRow>> {
        self.fresh()?;
        self.keep_queue();
        let sql = self.pinned(&page.sql, "listing operations")?;
        let failed = |e| self.err("listing operations", e);
        let rows = self
            .client
            .borrow_mut()
            .query(&*sql, &refs(&page.args))
            .map_err(failed)?;
        rows.iter()
            .map(|row| rows::operation_row(&mut Cells::new(row)))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(failed)
    }

    fn stream_operation_rows(
        &self,
        list: &Statement,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()> {
        self.fresh()?;
        self.keep_queue();
        // Streamed, so a ten-million-row ledger is never held in memory.
        let portal = Portal { untimed: true };
        self.stream(list, portal, "listing operations", |c| {
            each(rows::operation_row(c).map_err(|e| self.err("listing operations", e))?)
        })
    }

    fn count_of(&self, count: &Statement) -> Result<i64> {
        self.fresh()?;
        self.keep_queue();
        let sql = self.pinned(&count.sql, "counting operations")?;
        // The statement timeout bounds it.
        self.client
            .borrow_mut()
            .query_one(&*sql, &refs(&count.args))
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.err("counting operations", e))
    }

    fn filters_scan(&self) -> bool {
        // Adoption adds the filters' indexes with the console's tables: a
        // database without those tables has none of them.
        !self.tables.console
    }

    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        // The queue's states and the stale reservations are always exact
        // (the queue's table holds them); on a ledger above
        // EXACT_COUNTS_UP_TO the other states and the total come from the
        // planner's statistics and say so (`estimated`).
        self.fresh()?;
        self.keep_queue();
        self.state_counts_up_to(now, EXACT_COUNTS_UP_TO)
    }

    fn ids_of(&self, lookup: &Statement, doing: &str) -> Result<Vec<i64>> {
        self.fresh()?;
        let sql = self.pinned(&lookup.sql, doing)?;
        let failed = |e| self.err(doing, e);
        let rows = self
            .client
            .borrow_mut()
            .query(&*sql, &refs(&lookup.args))
            .map_err(failed)?;
        rows.iter()
            .map(|row| Cells::new(row).int(0, "id"))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(failed)
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        super::clusters::clusters(self, query, now, top)
    }
}

impl Pg {
    /// [`Reads::state_counts`], counting exactly up to `exact_up_to` rows.
    pub(super) fn state_counts_up_to(
        &self,
        now: DateTime<Utc>,
        exact_up_to: i64,
    ) -> Result<StateCounts> {
        let failed = |e| self.err("counting states", e);
        let others = self.estimated_counts(exact_up_to)?;
        let estimated = !others.is_empty();
        let candidates = self.queue_condition();
        let exact = if estimated {
            format!("SELECT state, count(*) FROM {candidates} GROUP BY state")
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
                    "SELECT count(*) FROM {candidates} AND {}",
                    stale_sql("o.", "$1")
                ),
                &[&whole_seconds(now)],
            )
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.err("counting stale reservations", e))?;
        Ok(rows::state_counts(raw, stale_reserved, estimated))
    }

    /// The operations in a state of the queue's candidates, as a FROM and
    /// its WHERE: through the queue's table where it is there, which a
    /// count then walks instead of the ledger.
    fn queue_condition(&self) -> String {
        let d = self.dialect();
        let join = d.queue_join("ASC", None).unwrap_or_default();
        format!(
            "operations o {join} WHERE {}",
            d.queue_candidates("o.state")
        )
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
}
