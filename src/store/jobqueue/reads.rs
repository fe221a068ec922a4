//! The job queue's part of [`Reads`] and [`History`]: the shared
//! statements of [`crate::store::filter`] run over the engine's view
//! ([`super::engine`]), so filters, keyset pages and counts mean what they
//! mean on a ledger-v1 ledger; one job's history from the engine's own
//! record. settle keeps no decision here yet, so the audit trail is empty.
//! Reads only.

use chrono::{DateTime, Utc};

use super::session::JobQueue;
use crate::domain::{
    Clusters, Decision, DecisionId, OperationDetail, OperationId, OperationRow, Seek, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::backend::{History, Reads};
use crate::store::cells::CellRead;
use crate::store::chain::ChainVerdict;
use crate::store::filter::{Statement, clusters_sql};
use crate::store::rows::{self, flagged};
use crate::store::sql::{Arg, Dialect};
use crate::store::tally::Tally;

impl Reads for JobQueue {
    fn dialect(&self) -> &dyn Dialect {
        self.sql
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
            tally.age(c.opt_int(3, "updated_at").map_err(failed)?);
            for i in 0..3 {
                let value = c.opt_text(i, "cluster value").map_err(failed)?;
                tally.text(i, value.as_deref());
            }
            Ok(())
        })?;
        Ok(tally.into_clusters(top))
    }
}

impl History for JobQueue {
    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        let doing = format!("reading job {id}");
        let key = [Arg::Int(id.0)];
        let operation = self
            .rows(self.sql.operation, &key, &doing, |c| rows::operation(c))?
            .pop()
            .ok_or_else(|| Error::NotFound {
                path: self.shown().to_path_buf(),
                what: id.to_string(),
            })?;
        let mut malformed = Vec::new();
        let attempts = self.rows(self.sql.attempts, &key, &doing, |c| rows::attempt(c))?;
        let attempts = flagged(attempts, &mut malformed, |a| {
            format!("attempt {}", a.attempt)
        });
        let events = self.rows(self.sql.events, &key, &doing, |c| rows::event(c))?;
        let events = flagged(events, &mut malformed, |e| format!("event {}", e.id));
        Ok(OperationDetail {
            operation,
            attempts,
            events,
            decisions: Vec::new(),
            retry_requests: Vec::new(),
            probes: Vec::new(),
            contract: None,
            history_malformed: malformed,
        })
    }

    fn audit_count(&self, _seek: Seek<DecisionId>) -> Result<usize> {
        Ok(0)
    }

    fn audit_page(&self, _seek: Seek<DecisionId>, _limit: usize) -> Result<Vec<Decision>> {
        Ok(Vec::new())
    }

    /// No decision is kept on a job queue yet: an empty chain holds.
    fn verify_chain(&self) -> Result<ChainVerdict> {
        Ok(ChainVerdict::Intact {
            decisions: 0,
            head: None,
        })
    }
}
