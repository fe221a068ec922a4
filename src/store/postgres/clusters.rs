//! The triage queue grouped by receiver, account, last error and age
//! bucket, with counts (issue 12, point 2), on PostgreSQL: one pass over
//! the matching rows in id order (the partial queue index serves it, as it
//! serves the pages), counted here per dimension exactly as
//! [`crate::store::sqlite`] counts them. Reads only.

use chrono::{DateTime, Utc};

use super::cells::Cells;
use super::conn::Pg;
use super::filter::{Params, refs, where_clause, where_sql};
use crate::domain::Clusters;
use crate::error::Result;
use crate::query::Query;
use crate::store::tally::Tally;

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
        let mut tally = Tally::new(now.timestamp());
        loop {
            let rows = tx.query_portal(&portal, BATCH).map_err(failed)?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let mut c = Cells::new(row);
                for i in 0..3 {
                    tally.text(
                        i,
                        c.opt_text(i, "cluster value").map_err(failed)?.as_deref(),
                    );
                }
                tally.age(c.opt_int(3, "updated_at").map_err(failed)?);
            }
        }
        tx.commit().map_err(failed)?;
        Ok(tally.into_clusters(top))
    }
}
