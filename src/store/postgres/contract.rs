//! The PostgreSQL backend's session, reads and bulk moves under
//! [`crate::store::backend`]'s contract, each forwarded to the file of its
//! concern. (Decisions, probes and retries implement their part of the
//! contract in their own files.)

use std::path::Path;

use chrono::{DateTime, Utc};

use super::conn::Pg;
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

impl Session for Pg {
    fn path(&self) -> &Path {
        &self.shown
    }

    fn file(&self) -> Option<&Path> {
        None
    }

    fn schema_version(&self) -> i64 {
        super::schema::SCHEMA_VERSION
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Result<i64> {
        self.heard_version()
    }

    fn reinspect(&mut self) -> Result<()> {
        self.inspect_again()
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        self.cancel_handle()
    }

    fn why_not_writable(&self) -> Error {
        Error::ledger(
            &self.shown,
            "opened read-only",
            "open it without --read-only, as a role that may write the ledger",
        )
    }

    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Reads for Pg {
    fn page(
        &self,
        query: &Query,
        seek: Seek<OperationId>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Pg::page(self, query, seek, limit, now)
    }

    fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Pg::sorted_page(self, query, sort, seek, limit, now)
    }

    fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        Pg::for_each_row(self, query, now, each)
    }

    fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        Pg::for_each_sorted_row(self, query, sort, now, each)
    }

    fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        Pg::count(self, query, now)
    }

    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        Pg::state_counts(self, now)
    }

    fn resolve(&self, spec: &str) -> Result<OperationId> {
        Pg::resolve(self, spec)
    }

    fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        Pg::operation_by_key(self, account, op_type, key)
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        Pg::clusters(self, query, now, top)
    }

    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        Pg::detail(self, id)
    }

    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        Pg::audit_count(self, seek)
    }

    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        Pg::audit_page(self, seek, limit)
    }

    fn verify_chain(&self) -> Result<ChainVerdict> {
        Pg::verify_chain(self)
    }
}

impl Transfer for Pg {
    fn import(
        &mut self,
        operations: &[NewOperation],
        contracts: &[OpTypeContract],
    ) -> Result<ImportReport> {
        Pg::import(self, operations, contracts)
    }

    fn copy_rows(
        &self,
        table: &Table,
        each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        Pg::copy_rows(self, table, each)
    }

    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        Pg::copy_from(self, source)
    }
}
