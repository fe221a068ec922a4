//! Long reads of a PostgreSQL ledger: one statement's rows handed on a
//! batch at a time through a portal, never all held in memory (the whole
//! list, the Clusters view's pass over the queue).

use super::cells::Cells;
use super::conn::Pg;
use super::filter::refs;
use crate::error::{Error, Result};
use crate::store::filter::Statement;

/// How a long read goes through a portal: `batch` rows at a time, and
/// `untimed` to lift the statement timeout (a whole list may take longer
/// than any one page should).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portal {
    pub batch: i32,
    pub untimed: bool,
}

impl Pg {
    /// Hands each row of `statement` to `each`, read through a portal
    /// `portal.batch` rows at a time ([`stream_on`]).
    pub(super) fn stream(
        &self,
        statement: &Statement,
        portal: Portal,
        doing: &str,
        mut each: impl FnMut(&mut Cells<'_>) -> Result<()>,
    ) -> Result<()> {
        if portal.untimed {
            self.asked.untimed();
        }
        let failed = |e| self.err(doing, e);
        stream_on(
            &mut self.client.borrow_mut(),
            statement,
            portal,
            &failed,
            &mut each,
        )
    }
}

/// Hands each row of `statement` on `client` to `each`, read through a
/// portal `portal.batch` rows at a time. A portal lives in a transaction;
/// read-only, so it never holds a lock a writer waits for.
pub(crate) fn stream_on(
    client: &mut postgres::Client,
    statement: &Statement,
    portal: Portal,
    failed: &dyn Fn(postgres::Error) -> Error,
    each: &mut dyn FnMut(&mut Cells<'_>) -> Result<()>,
) -> Result<()> {
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
