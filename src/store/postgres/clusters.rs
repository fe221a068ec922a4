//! The triage queue grouped by receiver, account, last error and age
//! bucket, with counts, for the Clusters view, on PostgreSQL: one pass
//! over the matching rows in id order (the queue's table serves it, as it
//! serves the pages), counted by the shared [`Tally`] exactly as
//! [`crate::store::sqlite`] counts them. Reads only.

use chrono::{DateTime, Utc};

use super::conn::Pg;
use super::portal::Portal;
use crate::domain::Clusters;
use crate::error::Result;
use crate::query::Query;
use crate::store::backend::Reads;
use crate::store::filter::clusters_sql;
use crate::store::tally::Tally;

/// [`crate::store::backend::Reads::clusters`] on PostgreSQL: every
/// matching row read as it arrives.
pub(super) fn clusters(pg: &Pg, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
    pg.fresh()?;
    pg.keep_queue();
    let failed = |e| pg.err("grouping the queue", e);
    let statement = clusters_sql(pg.dialect(), query, now);
    let portal = Portal { untimed: false };
    let mut tally = Tally::new(now.timestamp());
    pg.stream(&statement, portal, "grouping the queue", |c| {
        tally.row(c).map_err(failed)
    })?;
    Ok(tally.into_clusters(top))
}
