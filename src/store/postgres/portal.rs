//! Long reads of a PostgreSQL ledger: one statement's rows handed on as
//! they arrive, never all held in memory (the whole list, the Clusters
//! view's pass over the queue).

use super::cells::Cells;
use super::conn::Pg;
use super::filter::refs;
use crate::error::{Error, Result};
use crate::store::filter::Statement;

/// How a long read goes: `untimed` lifts the statement timeout (a whole
/// list may take longer than any one page should).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portal {
    pub untimed: bool,
}

impl Pg {
    /// Hands each row of `statement` to `each` as it arrives
    /// ([`stream_on`]).
    pub(super) fn stream(
        &self,
        statement: &Statement,
        portal: Portal,
        doing: &str,
        mut each: impl FnMut(&mut Cells<'_>) -> Result<()>,
    ) -> Result<()> {
        let sql = self.pinned(&statement.sql, doing)?;
        let statement = Statement {
            sql: sql.into_owned(),
            args: statement.args.clone(),
        };
        if portal.untimed {
            self.asked.untimed();
        }
        let failed = |e| self.err(doing, e);
        stream_on(
            &mut self.client.borrow_mut(),
            &statement,
            portal,
            &failed,
            &mut each,
        )
    }
}

/// Hands each row of `statement` on `client` to `each` as it arrives. The
/// server sends rows while the client handles the ones before (a portal
/// read a batch at a time leaves it idle between batches, see
/// docs/benchmarks.md, *Behind the code*); the client library takes them off the
/// socket only as fast as `each` does, so memory stays bounded. In a
/// read-only transaction, which never holds a lock a writer waits for.
pub(crate) fn stream_on(
    client: &mut postgres::Client,
    statement: &Statement,
    portal: Portal,
    failed: &dyn Fn(postgres::Error) -> Error,
    each: &mut dyn FnMut(&mut Cells<'_>) -> Result<()>,
) -> Result<()> {
    use postgres::fallible_iterator::FallibleIterator;
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(failed)?;
    if portal.untimed {
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(failed)?;
    }
    {
        let mut rows = tx
            .query_raw(&statement.sql, refs(&statement.args))
            .map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            each(&mut Cells::new(&row))?;
        }
    }
    tx.commit().map_err(failed)
}
