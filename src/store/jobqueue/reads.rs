//! The job queue's part of [`Reads`] and [`History`]: the shared
//! statements of [`crate::store::filter`] run over the engine's view
//! ([`super::engine`]), so filters, keyset pages and counts mean what they
//! mean on a ledger-v1 ledger. One job's history is [`super::history`].
//! Reads only.

use chrono::{DateTime, Utc};

use super::session::JobQueue;
use crate::domain::{Clusters, OperationRow, StateCounts};
use crate::error::Result;
use crate::query::Query;
use crate::store::backend::Reads;
use crate::store::cells::CellRead;
use crate::store::filter::{Statement, clusters_sql};
use crate::store::rows;
use crate::store::sql::{Arg, Dialect};
use crate::store::tally::Tally;

impl Reads for JobQueue {
    fn dialect(&self) -> &dyn Dialect {
        self.sql
    }

    /// The engines index their jobs for their workers, not by queue, task
    /// or key as settle filters them: a filter is read a slice of ids at a
    /// time.
    fn filters_scan(&self) -> bool {
        true
    }

    fn operation_rows(&self, page: &Statement) -> Result<Vec<OperationRow>> {
        self.rows(&page.sql, &page.args, "listing jobs", |c| {
            rows::operation_row(c)
        })
    }

    fn stream_operation_rows(
        &self,
        list: &Statement,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()> {
        self.stream(list, "listing jobs", &mut |c| {
            each(rows::operation_row(c).map_err(|e| self.err("listing jobs", e))?)
        })
    }

    fn count_of(&self, count: &Statement) -> Result<i64> {
        let n = self.rows(&count.sql, &count.args, "counting jobs", |c| {
            c.int(0, "count")
        })?;
        Ok(n.first().copied().unwrap_or(0))
    }

    fn ids_of(&self, lookup: &Statement, doing: &str) -> Result<Vec<i64>> {
        self.rows(&lookup.sql, &lookup.args, doing, |c| c.int(0, "id"))
    }

    /// Every state counted through the engine's state column, and the
    /// running jobs whose lease has passed.
    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        let from = self.sql.from;
        let raw = self.rows(
            &format!("SELECT o.state, count(*) FROM {from} GROUP BY o.state"),
            &[],
            "counting jobs",
            |c| Ok((c.text(0, "state")?, c.int(1, "count")?)),
        )?;
        // The engine's word is a constant of this file's engine, never
        // input: spelled in the SQL so it is compared as the engine's enum.
        let stale = self.rows(
            &format!(
                "SELECT count(*) FROM {from} WHERE o.engine_state = '{}'
                 AND (o.lease_expires_at IS NULL OR o.lease_expires_at <= $1)",
                self.sql.running
            ),
            &[Arg::now(now)],
            "counting stalled jobs",
            |c| c.int(0, "count"),
        )?;
        Ok(rows::state_counts(
            raw,
            stale.first().copied().unwrap_or(0),
            false,
        ))
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        let statement = clusters_sql(self.sql, query, now);
        let mut tally = Tally::new(now.timestamp());
        let failed = |e| self.err("grouping the queue", e);
        self.stream(&statement, "grouping the queue", &mut |c| {
            tally.row(c).map_err(failed)
        })?;
        Ok(tally.into_clusters(top))
    }
}
