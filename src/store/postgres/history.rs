//! PostgreSQL's [`Reader`], on which the shared reads of
//! [`crate::store::detail`] run (one operation's history, the audit trail),
//! and those reads as [`Pg`]'s part of the contract ([`History`]), returned
//! exactly as SQLite returns them.
//! Reads only; the decision transaction reuses [`load_detail`] on its own
//! transaction.

use postgres::GenericClient;

use super::cells::Cells;
use super::conn::Pg;
use super::filter::{PgSql, refs};
use crate::domain::{Decision, DecisionId, OperationDetail, OperationId, Seek};
use crate::error::{Error, Result};
use crate::store::backend::History;
use crate::store::chain::ChainVerdict;
use crate::store::detail;
use crate::store::sql::{Arg, Dialect, ReadRow, Reader};
use crate::store::tables::Tables;

type PgResult<T> = std::result::Result<T, postgres::Error>;

/// A connection or a transaction.
impl<C: GenericClient> Reader for &mut C {
    type Error = postgres::Error;

    fn dialect(&self) -> &dyn Dialect {
        &PgSql::ALL
    }

    fn rows<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> PgResult<Vec<T>> {
        self.query(sql, &refs(args))?
            .iter()
            .map(|row| read(&mut Cells::new(row)))
            .collect()
    }

    fn row<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> PgResult<Option<T>> {
        self.query_opt(sql, &refs(args))?
            .map(|row| read(&mut Cells::new(&row)))
            .transpose()
    }
}

/// A connection or a transaction read with a given [`PgSql`]: a look at a
/// ledger whose events settle's table does not hold reads them by
/// `op_id`.
struct PgReader<'a, C> {
    client: &'a mut C,
    sql: &'static PgSql,
}

impl<C: GenericClient> Reader for PgReader<'_, C> {
    type Error = postgres::Error;

    fn dialect(&self) -> &dyn Dialect {
        self.sql
    }

    fn rows<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> PgResult<Vec<T>> {
        Reader::rows(&mut self.client, sql, args, read)
    }

    fn row<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> PgResult<Option<T>> {
        Reader::row(&mut self.client, sql, args, read)
    }
}

impl History for Pg {
    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        self.fresh()?;
        let mut client = self.client.borrow_mut();
        load_detail(&mut *client, id, self.tables, self.spelling())
            .map_err(|e| self.err(&format!("reading operation {id}"), e))?
            .ok_or_else(|| Error::NotFound {
                path: self.shown.clone(),
                what: id.to_string(),
            })
    }

    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        self.fresh()?;
        detail::audit_count(&mut &mut *self.client.borrow_mut(), self.tables, seek)
            .map_err(|e| self.err("counting the audit trail", e))
    }

    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        self.fresh()?;
        detail::audit_page(
            &mut &mut *self.client.borrow_mut(),
            self.tables,
            seek,
            limit,
        )
        .map_err(|e| self.err("reading the audit trail", e))
    }

    fn verify_chain(&self) -> Result<ChainVerdict> {
        super::chain::verify(self)
    }
}

/// Reads one operation's whole history in the spelling `sql`, on a plain
/// connection or inside a transaction: the decision transaction must
/// judge the rules on what it is about to change.
pub(super) fn load_detail(
    client: &mut impl GenericClient,
    id: OperationId,
    tables: Tables,
    sql: &'static PgSql,
) -> PgResult<Option<OperationDetail>> {
    detail::load_detail(&mut PgReader { client, sql }, id, tables)
}
