//! The triage queue grouped by receiver, account, last error and age
//! bucket, with counts (issue 12, point 2). One pass over the matching rows
//! in the queue's page order (so the partial index `settle_operations_queue`
//! serves it, as it serves the pages: no temporary B-tree), counted here
//! per dimension. A `GROUP BY` of the four columns was measured slower on a
//! 1M ledger (1.9 s against 0.5 s): nearly every row is its own combination,
//! so SQLite sorted the queue. Reads only.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Row, params_from_iter};

use super::Cells;
use super::filter::{instant_sql, where_clause, where_sql};
use crate::domain::Clusters;
use crate::error::Result;
use crate::query::Query;
use crate::store::sqlite::Sqlite;
use crate::store::tally::Tally;

impl Sqlite {
    /// The operations matching `query` (the console asks for the queue)
    /// grouped by each [`ClusterDimension`], the `top` biggest groups of
    /// each kept. Reads every matching row: run it off the screen's thread.
    pub fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        let failed = |e| self.err("grouping the queue", e);
        let (sql, values) = self.clusters_sql(query, now);
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.err("preparing the clusters query", e))?;
        let mut rows = stmt.query(params_from_iter(values)).map_err(failed)?;
        let mut tally = Tally::new(now.timestamp());
        while let Some(row) = rows.next().map_err(failed)? {
            for i in 0..3 {
                tally.text(i, cell_text(row, i).map_err(failed)?.as_deref());
            }
            tally.age(match row.get_ref(3).map_err(failed)? {
                ValueRef::Integer(n) => Some(n),
                _ => None,
            });
        }
        Ok(tally.into_clusters(top))
    }

    /// The statement: each matching row's type, account, last error and
    /// last change (seconds since the epoch; NULL when not a time), in id
    /// order so the same index as the queue's pages serves it.
    pub(crate) fn clusters_sql(&self, query: &Query, now: DateTime<Utc>) -> (String, Vec<Value>) {
        let (clause, values) = where_clause(query, now, self.derived);
        let (from, last_error) = if self.derived {
            (
                "operations o LEFT JOIN settle_op_summary s ON s.op_id = o.id",
                "s.last_error",
            )
        } else {
            (
                "operations o",
                "(SELECT a.error FROM attempts a WHERE a.op_id = o.id \
                 ORDER BY a.attempt DESC LIMIT 1)",
            )
        };
        let sql = format!(
            "SELECT o.op_type, o.account, {last_error}, {} FROM {from} {} ORDER BY o.id",
            instant_sql("o.updated_at"),
            where_sql(&clause)
        );
        (sql, values)
    }
}

/// Cell `i` of `row` as a group's value: plain UTF-8 text borrowed, so a
/// row allocates nothing once its values were seen; anything else as the
/// list shows it (lossy UTF-8, `<blob N bytes>`, a number's text); NULL as
/// None.
fn cell_text<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<Option<Cow<'r, str>>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(t) => Some(Cow::Borrowed(t)),
            Err(_) => Some(Cow::Owned(shown(row, i)?)),
        },
        _ => Some(Cow::Owned(shown(row, i)?)),
    })
}

fn shown(row: &Row<'_>, i: usize) -> rusqlite::Result<String> {
    Ok(Cells::new(row)
        .opt_text(i, "cluster value")?
        .unwrap_or_default())
}
