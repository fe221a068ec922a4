//! The triage queue grouped by receiver, account, last error and age
//! bucket, with counts (issue 12, point 2). One pass over the matching rows
//! in the queue's page order (so the partial index `settle_operations_queue`
//! serves it, as it serves the pages: no temporary B-tree), counted here
//! per dimension. A `GROUP BY` of the four columns was measured slower on a
//! 1M ledger (1.9 s against 0.5 s): nearly every row is its own combination,
//! so SQLite sorted the queue. Reads only.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Row, params_from_iter};

use super::Cells;
use super::filter::{instant_sql, where_clause, where_sql};
use crate::domain::clusters::{AGE_BUCKETS, AGE_UNREADABLE};
use crate::domain::{Cluster, ClusterDimension, Clusters};
use crate::error::Result;
use crate::query::Query;
use crate::store::sqlite::Sqlite;

/// The three text dimensions, in the statement's column order.
const TEXT_DIMENSIONS: [ClusterDimension; 3] = [
    ClusterDimension::OpType,
    ClusterDimension::Account,
    ClusterDimension::LastError,
];

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
        let mut text: [TextCounts; 3] = Default::default();
        let mut ages: HashMap<&'static str, i64> = HashMap::new();
        while let Some(row) = rows.next().map_err(failed)? {
            for (i, counts) in text.iter_mut().enumerate() {
                counts.count(row, i).map_err(failed)?;
            }
            let instant: Option<i64> = match row.get_ref(3).map_err(failed)? {
                ValueRef::Integer(n) => Some(n),
                _ => None,
            };
            *ages
                .entry(age_bucket(instant, now.timestamp()))
                .or_insert(0) += 1;
        }
        let groups = TEXT_DIMENSIONS
            .iter()
            .zip(text)
            .flat_map(|(&dimension, counts)| counts.into_groups(dimension))
            .chain(ages.into_iter().map(|(label, count)| Cluster {
                dimension: ClusterDimension::Age,
                value: Some(label.to_string()),
                count,
            }))
            .collect();
        Ok(Clusters::from_groups(groups, top))
    }

    /// The statement: each matching row's type, account, last error and
    /// last change (seconds since the epoch; NULL when not a time), in id
    /// order so the same index as the queue's pages serves it.
    pub(in crate::store) fn clusters_sql(
        &self,
        query: &Query,
        now: DateTime<Utc>,
    ) -> (String, Vec<Value>) {
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

/// One text dimension's counts: per value, and the NULLs.
#[derive(Default)]
struct TextCounts {
    values: HashMap<String, i64>,
    null: i64,
}

impl TextCounts {
    /// Counts cell `i` of `row`. Plain UTF-8 text is looked up borrowed,
    /// so a row allocates nothing once its values were seen; anything else
    /// reads as the list shows it (lossy UTF-8, `<blob N bytes>`, a
    /// number's text).
    fn count(&mut self, row: &Row<'_>, i: usize) -> rusqlite::Result<()> {
        let text = match row.get_ref(i)? {
            ValueRef::Null => {
                self.null += 1;
                return Ok(());
            }
            ValueRef::Text(bytes) => std::str::from_utf8(bytes).ok(),
            _ => None,
        };
        match text {
            Some(t) => match self.values.get_mut(t) {
                Some(n) => *n += 1,
                None => {
                    self.values.insert(t.to_string(), 1);
                }
            },
            None => {
                let shown = Cells::new(row).opt_text(i, "cluster value")?;
                *self.values.entry(shown.unwrap_or_default()).or_insert(0) += 1;
            }
        }
        Ok(())
    }

    fn into_groups(self, dimension: ClusterDimension) -> impl Iterator<Item = Cluster> {
        let null = (self.null > 0).then_some(Cluster {
            dimension,
            value: None,
            count: self.null,
        });
        self.values
            .into_iter()
            .map(move |(value, count)| Cluster {
                dimension,
                value: Some(value),
                count,
            })
            .chain(null)
    }
}

/// The bucket of an operation last changed at `instant` (seconds since
/// the epoch), read from [`AGE_BUCKETS`].
pub(in crate::store) fn age_bucket(instant: Option<i64>, now: i64) -> &'static str {
    let Some(at) = instant else {
        return AGE_UNREADABLE;
    };
    let age = now.saturating_sub(at);
    AGE_BUCKETS
        .iter()
        .find(|(_, below)| below.is_none_or(|b| age < b))
        .map_or(AGE_UNREADABLE, |(label, _)| label)
}
