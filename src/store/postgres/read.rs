//! Reads of a PostgreSQL ledger: keyset pages, streams, counts (the All total
//! may be an estimate), clusters, one operation's history, the audit trail.
//! No statement here writes.

use chrono::{DateTime, Utc};

use super::Pg;
use crate::domain::{
    Clusters, Decision, DecisionId, OperationDetail, OperationId, OperationRow, Seek, Sort,
    SortKey, StateCounts,
};
use crate::error::Result;
use crate::query::Query;

impl Pg {
    pub fn page(
        &self,
        _query: &Query,
        _seek: Seek<OperationId>,
        _limit: usize,
        _now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Err(self.not_yet("paging"))
    }

    pub fn sorted_page(
        &self,
        _query: &Query,
        _sort: Sort,
        _seek: Seek<SortKey>,
        _limit: usize,
        _now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        Err(self.not_yet("paging"))
    }

    pub fn for_each_row(
        &self,
        query: &Query,
        now: DateTime<Utc>,
        each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        self.for_each_sorted_row(query, Sort::default(), now, each)
    }

    pub fn for_each_sorted_row(
        &self,
        _query: &Query,
        _sort: Sort,
        _now: DateTime<Utc>,
        _each: impl FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        Err(self.not_yet("listing"))
    }

    pub fn count(&self, _query: &Query, _now: DateTime<Utc>) -> Result<i64> {
        Err(self.not_yet("counting"))
    }

    pub fn state_counts(&self, _now: DateTime<Utc>) -> Result<StateCounts> {
        Err(self.not_yet("counting"))
    }

    pub fn resolve(&self, _spec: &str) -> Result<OperationId> {
        Err(self.not_yet("finding an operation"))
    }

    pub fn operation_by_key(
        &self,
        _account: &str,
        _op_type: &str,
        _key: &str,
    ) -> Result<Option<OperationId>> {
        Err(self.not_yet("finding an operation"))
    }

    pub fn clusters(&self, _query: &Query, _now: DateTime<Utc>, _top: usize) -> Result<Clusters> {
        Err(self.not_yet("grouping"))
    }

    pub fn detail(&self, _id: OperationId) -> Result<OperationDetail> {
        Err(self.not_yet("reading an operation"))
    }

    pub fn audit_count(&self, _seek: Seek<DecisionId>) -> Result<usize> {
        Err(self.not_yet("reading the audit trail"))
    }

    pub fn audit_page(&self, _seek: Seek<DecisionId>, _limit: usize) -> Result<Vec<Decision>> {
        Err(self.not_yet("reading the audit trail"))
    }
}
