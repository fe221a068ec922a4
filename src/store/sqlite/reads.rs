//! SQLite's part of [`Reads`]: the pages, streams and counts that the
//! contract builds from the shared statements of [`crate::store::filter`]
//! in SQLite's spelling ([`filter::SqliteSql`]), and the lookups of
//! [`crate::store::detail`], run here; the state counts. Every list is a bounded page found by keyset
//! pagination on `(sort column, id)` ([`crate::domain::Sort`]), never
//! OFFSET or a full load; the default id order and the account and op type
//! orders walk an index, the others sort the filter's matches. One
//! operation's history and the audit trail are in [`history`]; no
//! statement here writes.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params_from_iter};

use super::conn::Sqlite;
use crate::domain::{
    Clusters, OperationDetail, OperationId, OperationRow, StateCounts, TextSearch,
};
use crate::error::Result;
use crate::query::Query;
use crate::store::backend::Reads;
use crate::store::cells::CellRead;
use crate::store::detail;
use crate::store::filter::Statement;
use crate::store::rows;
use crate::store::sql::{Dialect, QueryDialect};
use crate::store::tables::Tables;

mod cells;
mod clusters;
pub(super) mod filter;
mod history;
mod text_index;
use cells::Cells;
pub(super) use filter::{DERIVED, SqliteSql, UNDERIVED};
use filter::{LAST_EVENT_GATHERED, LAST_EVENT_SCAN, LAST_EVENTS};
pub(super) use filter::{STALE_CANDIDATES, instant_sql};
#[cfg(test)]
pub(super) use text_index::indexed_terms;

/// Reads one operation's whole history, on the connection or inside the
/// decision transaction, which must judge the rules on what it is about to
/// change.
pub(super) fn load_detail(
    conn: &Connection,
    id: OperationId,
    tables: Tables,
) -> rusqlite::Result<Option<OperationDetail>> {
    detail::load_detail(&mut &*conn, id, tables)
}

impl Sqlite {
    /// Hands each row of `statement` to `each` as it is read.
    fn stream(
        &self,
        statement: &Statement,
        preparing: &str,
        doing: &str,
        mut each: impl FnMut(&mut Cells<'_, '_>) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached(&statement.sql)
            .map_err(|e| self.err(preparing, e))?;
        let mut rows = stmt
            .query(params_from_iter(&statement.args))
            .map_err(|e| self.err(doing, e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(doing, e))? {
            each(&mut Cells::new(row))?;
        }
        Ok(())
    }
}

impl Sqlite {
    /// Every row of a ledger shown without adopting it: each operation's
    /// newest event gathered first in one pass ([`LAST_EVENTS`], a
    /// temporary table, so a read-only file stays untouched), in one
    /// savepoint so the rows and their events are one snapshot.
    fn stream_unadopted(
        &self,
        list: &Statement,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()> {
        let gathering = |e| self.err("gathering each operation's newest event", e);
        self.conn
            .execute_batch(&format!("SAVEPOINT settle_list; {LAST_EVENTS}"))
            .map_err(gathering)?;
        let whole = Statement {
            sql: list.sql.replace(LAST_EVENT_SCAN, LAST_EVENT_GATHERED),
            args: list.args.clone(),
        };
        let streamed = self.stream(
            &whole,
            "preparing the list query",
            "listing operations",
            |c| each(rows::operation_row(c).map_err(|e| self.err("listing operations", e))?),
        );
        let ended = self
            .conn
            .execute_batch("DROP TABLE temp.settle_last_events; RELEASE settle_list")
            .map_err(gathering);
        streamed.and(ended)
    }
}

impl Reads for Sqlite {
    fn dialect(&self) -> &dyn Dialect {
        // Through the read model once it is built.
        if self.derived() { &DERIVED } else { &UNDERIVED }
    }

    /// The read model's trigram index for the text terms it finds few
    /// candidates of.
    fn dialect_for(&self, query: &Query) -> Result<QueryDialect<'_>> {
        // Free text is not in the index: only `err:` terms can use it.
        if !self.derived() || query.errors.is_empty() {
            return Ok(QueryDialect::Shared(self.dialect()));
        }
        self.fresh()?;
        let indexed = text_index::indexed_terms(self, query)?;
        Ok(if indexed.is_empty() {
            QueryDialect::Shared(self.dialect())
        } else {
            QueryDialect::Own(Box::new(SqliteSql {
                derived: true,
                indexed,
            }))
        })
    }

    fn operation_rows(&self, page: &Statement) -> Result<Vec<OperationRow>> {
        self.fresh()?;
        let mut stmt = self
            .conn
            .prepare_cached(&page.sql)
            .map_err(|e| self.err("preparing the list query", e))?;
        stmt.query_map(params_from_iter(&page.args), |r| {
            rows::operation_row(&mut Cells::new(r))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| self.err("listing operations", e))
    }

    fn stream_operation_rows(
        &self,
        list: &Statement,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()> {
        self.fresh()?;
        if !self.derived() && list.sql.contains(LAST_EVENT_SCAN) {
            return self.stream_unadopted(list, each);
        }
        self.stream(
            list,
            "preparing the list query",
            "listing operations",
            |c| each(rows::operation_row(c).map_err(|e| self.err("listing operations", e))?),
        )
    }

    fn count_of(&self, count: &Statement) -> Result<i64> {
        self.fresh()?;
        self.conn
            .query_row(&count.sql, params_from_iter(&count.args), |r| r.get(0))
            .map_err(|e| self.err("counting operations", e))
    }

    fn filters_scan(&self) -> bool {
        // The filters' indexes are the read model's: until it is attached
        // (built, or caught up after a look), a filter is a scan.
        !self.derived()
    }

    /// The read model's trigram index, once the model is there; until
    /// then every filter is a scan ([`Reads::filters_scan`]).
    fn text_search(&self) -> TextSearch {
        TextSearch::Trigram
    }

    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        // The read model's `settle_state_counts` (a few rows) and the stale
        // reservations through its lease index, so the cost does not grow
        // with the ledger. An unadopted ledger is counted.
        self.fresh()?;
        let (sql, stale_from) = if self.derived() {
            (
                "SELECT state, n FROM rm.settle_state_counts WHERE n <> 0",
                "rm.settle_ops",
            )
        } else {
            (
                "SELECT state, COUNT(*) FROM operations GROUP BY state",
                "main.operations",
            )
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
        let stale_reserved = self
            .conn
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM {stale_from} WHERE {STALE_CANDIDATES} AND {} <= ?1",
                    instant_sql("lease_expires_at")
                ),
                [now.timestamp()],
                |r| r.get(0),
            )
            .map_err(|e| self.err("counting stale reservations", e))?;
        Ok(rows::state_counts(raw, stale_reserved, false))
    }

    fn ids_of(&self, lookup: &Statement, doing: &str) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached(&lookup.sql)
            .map_err(|e| self.err(doing, e))?;
        stmt.query_map(params_from_iter(&lookup.args), |r| {
            Cells::new(r).int(0, "id")
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| self.err(doing, e))
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        self.fresh()?;
        clusters::clusters(self, query, now, top)
    }
}

#[cfg(test)]
impl Sqlite {
    /// The statement of a page (`limit`) or of the whole list (`None`), its
    /// arguments, and whether to reverse its rows, for the plan tests.
    #[cfg(test)]
    pub(super) fn page_sql(
        &self,
        query: &Query,
        sort: crate::domain::Sort,
        seek: crate::domain::Seek<crate::domain::SortKey>,
        limit: Option<usize>,
        now: DateTime<Utc>,
    ) -> (String, Vec<crate::store::sql::Arg>, bool) {
        let dialect = self.dialect_for(query).unwrap();
        let (page, reverse) =
            crate::store::filter::page_sql(&*dialect, query, sort, seek, limit, now);
        (page.sql, page.args, reverse)
    }

    /// The Clusters view's statement and its arguments, for the plan tests.
    #[cfg(test)]
    pub(super) fn clusters_sql(
        &self,
        query: &Query,
        now: DateTime<Utc>,
    ) -> (String, Vec<crate::store::sql::Arg>) {
        let statement = crate::store::filter::clusters_sql(self.dialect(), query, now);
        (statement.sql, statement.args)
    }
}
