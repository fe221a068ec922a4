//! The SQLite backend's session, reads and bulk moves under
//! [`crate::store::backend`]'s contract, each forwarded to the file of its
//! concern. (Decisions, probes and retries implement their part of the
//! contract in their own files.)

use std::path::Path;

use chrono::{DateTime, Utc};

use super::conn::Sqlite;
use crate::domain::{
    Clusters, Decision, DecisionId, NewOperation, OpTypeContract, OperationDetail, OperationId,
    OperationRow, Seek, Sort, SortKey, StateCounts,
};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::backend::{Reads, Session, Transfer};
use crate::store::chain::ChainVerdict;
use crate::store::copy::{CopyReport, RowSource, Table, Value};
use crate::store::import_report::ImportReport;
use crate::store::interrupt::InterruptHandle;

impl Session for Sqlite {
    fn path(&self) -> &Path {
        &self.path
    }

    fn file(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn schema_version(&self) -> i64 {
        super::schema::SCHEMA_VERSION
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.err("reading data_version", e))
    }

    fn reinspect(&mut self) -> Result<()> {
        let found = super::schema::inspect(&self.conn, &self.path)?;
        self.tables = found.tables();
        self.derived = found.derived;
        Ok(())
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(self.conn.get_interrupt_handle())
    }

    fn why_not_writable(&self) -> Error {
        super::open::not_writable(&self.path)
    }

    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Reads for Sqlite {
    fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Sqlite::page(self, query, seek, limit, now)
    }

    fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Sqlite::sorted_page(self, query, sort, seek, limit, now)
    }

    fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        Sqlite::for_each_row(self, query, now, each)
    }

    fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        Sqlite::for_each_sorted_row(self, query, sort, now, each)
    }

    fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        Sqlite::count(self, query, now)
    }

    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        Sqlite::state_counts(self, now)
    }

    fn resolve(&self, spec: &str) -> Result<OperationId> {
        Sqlite::resolve(self, spec)
    }

    fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        Sqlite::operation_by_key(self, account, op_type, key)
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        Sqlite::clusters(self, query, now, top)
    }

    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        Sqlite::detail(self, id)
    }

    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        Sqlite::audit_count(self, seek)
    }

    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        Sqlite::audit_page(self, seek, limit)
    }

    fn verify_chain(&self) -> Result<ChainVerdict> {
        Sqlite::verify_chain(self)
    }
}

impl Transfer for Sqlite {
    fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        Sqlite::import(self, operations, contracts)
    }

    fn copy_rows(
        &self,
        table: &Table,
        each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        Sqlite::copy_rows(self, table, each)
    }

    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        Sqlite::copy_from(self, source)
    }
}
