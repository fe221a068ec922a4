//! The triage queue grouped by receiver, account, last error and age
//! bucket, with counts (issue 12, point 2), on PostgreSQL: one pass over
//! the matching rows in id order (the partial queue index serves it, as it
//! serves the pages), counted here per dimension exactly as
//! [`crate::store::sqlite`] counts them. Reads only.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::Pg;
use super::cells::Cells;
use super::filter::{Params, refs, where_clause, where_sql};
use crate::domain::{Cluster, ClusterDimension, Clusters};
use crate::error::Result;
use crate::query::Query;
use crate::store::sqlite::age_bucket;

/// The three text dimensions, in the statement's column order.
const TEXT_DIMENSIONS: [ClusterDimension; 3] = [
    ClusterDimension::OpType,
    ClusterDimension::Account,
    ClusterDimension::LastError,
];

impl Pg {
    /// The operations matching `query` grouped by each [`ClusterDimension`],
    /// the `top` biggest groups of each kept. Reads every matching row
    /// (through a portal, a batch at a time): run it off the screen's thread.
    pub fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        self.fresh()?;
        const BATCH: i32 = 1000;
        let failed = |e| self.err("grouping the queue", e);
        let mut values = Params::new();
        let clause = where_clause(query, now, &mut values);
        // The last change as whole epoch seconds, as SQLite reads it.
        let sql = format!(
            "SELECT o.op_type, o.account,
                 (SELECT a.error FROM attempts a WHERE a.op_id = o.id
                  ORDER BY a.attempt DESC LIMIT 1),
                 floor(extract(epoch FROM o.updated_at))::bigint
             FROM operations o {} ORDER BY o.id",
            where_sql(&clause)
        );
        let mut client = self.client.borrow_mut();
        let mut tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .map_err(failed)?;
        let portal = tx.bind(&sql, &refs(&values)).map_err(failed)?;
        let mut text: [TextCounts; 3] = Default::default();
        let mut ages: HashMap<&'static str, i64> = HashMap::new();
        loop {
            let rows = tx.query_portal(&portal, BATCH).map_err(failed)?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let mut c = Cells::new(row);
                for (i, counts) in text.iter_mut().enumerate() {
                    counts.count(c.opt_text(i, "cluster value").map_err(failed)?);
                }
                let instant = c.opt_int(3, "updated_at").map_err(failed)?;
                *ages
                    .entry(age_bucket(instant, now.timestamp()))
                    .or_insert(0) += 1;
            }
        }
        tx.commit().map_err(failed)?;
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
}

/// One text dimension's counts: per value, and the NULLs.
#[derive(Default)]
struct TextCounts {
    values: HashMap<String, i64>,
    null: i64,
}

impl TextCounts {
    fn count(&mut self, value: Option<String>) {
        match value {
            None => self.null += 1,
            Some(v) => *self.values.entry(v).or_insert(0) += 1,
        }
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
