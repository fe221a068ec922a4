//! SQLite's [`Reader`], on which the shared reads of [`crate::store::detail`]
//! run (one operation's history, the audit trail), and those reads as
//! [`Sqlite`]'s part of the contract ([`History`]). Reads only.

use rusqlite::{Connection, params_from_iter};

use super::cells::Cells;
use super::filter::{DERIVED, UNDERIVED};
use crate::domain::{Decision, DecisionId, OperationDetail, OperationId, Seek};
use crate::error::{Error, Result};
use crate::store::backend::History;
use crate::store::chain::ChainVerdict;
use crate::store::detail;
use crate::store::sql::{Arg, Dialect, ReadRow, Reader};
use crate::store::sqlite::conn::Sqlite;

/// A connection or transaction, each statement prepared once and cached.
impl Reader for &Connection {
    type Error = rusqlite::Error;

    /// The read model's spelling where it is attached: an operation's
    /// events are found through its index (the service's `events` has no
    /// index of settle's). The decision and retry transactions read here
    /// too.
    fn dialect(&self) -> &dyn Dialect {
        let attached = self
            .query_row(
                "SELECT 1 FROM pragma_database_list WHERE name = 'rm'",
                [],
                |_| Ok(()),
            )
            .is_ok();
        if attached { &DERIVED } else { &UNDERIVED }
    }

    fn rows<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> rusqlite::Result<Vec<T>> {
        let mut stmt = self.prepare_cached(sql)?;
        let mut rows = stmt.query(params_from_iter(args))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(read(&mut Cells::new(row))?);
        }
        Ok(out)
    }

    fn row<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> rusqlite::Result<Option<T>> {
        let mut stmt = self.prepare_cached(sql)?;
        let mut rows = stmt.query(params_from_iter(args))?;
        rows.next()?
            .map(|row| read(&mut Cells::new(row)))
            .transpose()
    }
}

impl History for Sqlite {
    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        detail::load_detail(&mut &self.conn, id, self.tables)
            .map_err(|e| self.err(&format!("reading operation {id}"), e))?
            .ok_or_else(|| Error::NotFound {
                path: self.path.clone(),
                what: id.to_string(),
            })
    }

    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        detail::audit_count(&mut &self.conn, self.tables, seek)
            .map_err(|e| self.err("counting the audit trail", e))
    }

    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        detail::audit_page(&mut &self.conn, self.tables, seek, limit)
            .map_err(|e| self.err("reading the audit trail", e))
    }

    fn verify_chain(&self) -> Result<ChainVerdict> {
        crate::store::sqlite::chain::verify(self)
    }
}
