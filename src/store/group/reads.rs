//! Reading a group: each read asks every member it concerns, in parallel,
//! in that member's own ids ([`super::ids`]), and merges the answers
//! ([`super::merge`]). Every provided read of the contract that would
//! run a statement is given here, so the statement-level calls below
//! are never reached: a group runs no SQL of its own.

use chrono::{DateTime, Utc};

use super::Group;
use super::merge;
use crate::domain::{
    Clusters, Decision, DecisionId, OperationDetail, OperationId, OperationRow, Origin, Seek, Sort,
    SortKey, StateCounts, TextSearch,
};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::ChainVerdict;
use crate::store::backend::{History, Reads};
use crate::store::filter::Statement;
use crate::store::sql::Dialect;

/// Rows a member is asked for at once when a group streams every match.
const STREAM_PAGE: usize = 1_000;

/// A member's Clusters are asked for this many more groups than shown,
/// so a group big across the incident but small in each ledger is
/// still counted where it ranks.
const CLUSTER_DEPTH: usize = 4;

impl Group {
    /// A member's rows with the group's ids and their origin.
    fn adopt_rows(&self, member: usize, rows: Vec<OperationRow>) -> Vec<OperationRow> {
        let name = &self.members[member].name;
        rows.into_iter()
            .map(|mut row| {
                row.origin = Some(Origin {
                    ledger: name.clone(),
                    id: row.id,
                });
                row.id = self.spread.global(member, row.id);
                row
            })
            .collect()
    }

    /// The member a group's id names, and its id there.
    fn route(&self, id: OperationId) -> Result<(&super::Slot, OperationId)> {
        let (member, local) = self.spread.split(id);
        match self.members.get(member) {
            Some(slot) => Ok((slot, local)),
            None => Err(Error::ledger(
                &self.path,
                format!("no operation {id} in the group"),
                "pick a row of the list",
            )),
        }
    }

    fn no_statement(&self) -> Error {
        Error::ledger(
            &self.path,
            "a group of ledgers runs no statement of its own",
            "this is a bug in settle: report it",
        )
    }

    fn no_audit(&self) -> Error {
        Error::ledger(
            &self.path,
            "the audit trail is each ledger's own, chained in that ledger",
            "open one ledger of the group for its trail (settle audit @NAME)",
        )
    }
}

impl Reads for Group {
    fn dialect(&self) -> &dyn Dialect {
        &self.dialect
    }

    fn operation_rows(&self, _page: &Statement) -> Result<Vec<OperationRow>> {
        Err(self.no_statement())
    }

    fn stream_operation_rows(
        &self,
        _list: &Statement,
        _each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<()> {
        Err(self.no_statement())
    }

    fn count_of(&self, _count: &Statement) -> Result<i64> {
        Err(self.no_statement())
    }

    fn ids_of(&self, _lookup: &Statement, _doing: &str) -> Result<Vec<i64>> {
        Err(self.no_statement())
    }

    fn sorted_page(
        &self,
        query: &Query,
        sort: Sort,
        seek: Seek<SortKey>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let pages = self.each(
            |slot| query.for_ledger(&slot.name),
            |k, ledger, query| {
                let seek = self.spread.seek(k, sort, &seek);
                ledger.sorted_page(query, sort, seek, limit, now)
            },
        )?;
        let pages = pages
            .into_iter()
            .map(|(k, rows)| self.adopt_rows(k, rows))
            .collect();
        Ok(merge::page(pages, sort, &seek, limit))
    }

    /// Page after page of the merged list: a page of each member in
    /// memory at most.
    fn for_each_sorted_row(
        &self,
        query: &Query,
        sort: Sort,
        after: Option<SortKey>,
        now: DateTime<Utc>,
        each: &mut dyn FnMut(OperationRow) -> Result<()>,
    ) -> Result<u64> {
        let mut seek = after.map_or(Seek::First, Seek::After);
        let mut n = 0;
        loop {
            let page = self.sorted_page(query, sort, seek, STREAM_PAGE, now)?;
            let more = page.len() == STREAM_PAGE;
            let last = page.last().map(|row| sort.key_of(row));
            for row in page {
                each(row)?;
                n += 1;
            }
            match last.filter(|_| more) {
                Some(key) => seek = Seek::After(key),
                None => return Ok(n),
            }
        }
    }

    fn filters_scan(&self) -> bool {
        self.members.iter().any(|slot| {
            super::locked(&slot.ledger)
                .as_ref()
                .is_some_and(crate::store::Ledger::filters_scan)
        })
    }

    fn text_search(&self) -> TextSearch {
        self.members
            .iter()
            .find_map(|slot| {
                super::locked(&slot.ledger)
                    .as_ref()
                    .map(crate::store::Ledger::text_search)
            })
            .unwrap_or(TextSearch::Unindexed)
    }

    fn id_span(&self) -> Result<Option<(i64, i64)>> {
        let spans = self.every(|_, ledger| ledger.id_span())?;
        let ends = spans.into_iter().filter_map(|(k, span)| {
            let (low, high) = span?;
            let global = |id| self.spread.global(k, OperationId(id)).0;
            Some((global(low), global(high)))
        });
        Ok(ends.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))))
    }

    fn range_page(
        &self,
        query: &Query,
        range: (i64, i64),
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<Vec<OperationRow>> {
        let pages = self.each(
            |slot| query.for_ledger(&slot.name),
            |k, ledger, query| ledger.range_page(query, self.spread.range(k, range), limit, now),
        )?;
        let pages = pages
            .into_iter()
            .map(|(k, rows)| self.adopt_rows(k, rows))
            .collect();
        Ok(merge::page(pages, Sort::default(), &Seek::First, limit))
    }

    fn count(&self, query: &Query, now: DateTime<Utc>) -> Result<i64> {
        let counts = self.each(
            |slot| query.for_ledger(&slot.name),
            |_, ledger, query| ledger.count(query, now),
        )?;
        Ok(counts.into_iter().map(|(_, n)| n).sum())
    }

    fn state_counts(&self, now: DateTime<Utc>) -> Result<StateCounts> {
        let each = self.every(|_, ledger| ledger.state_counts(now))?;
        Ok(merge::state_counts(
            each.into_iter().map(|(_, c)| c).collect(),
        ))
    }

    /// `NAME:ID`, or an id or key only one member has.
    fn resolve(&self, spec: &str) -> Result<OperationId> {
        if let Some((name, rest)) = spec.split_once(':')
            && let Some(k) = self.members.iter().position(|s| &*s.name == name)
        {
            let local = self.members[k].with(|ledger| ledger.resolve(rest))?;
            return Ok(self.spread.global(k, local));
        }
        let found = self.every(|_, ledger| Ok(ledger.resolve(spec).ok()))?;
        let found: Vec<(usize, OperationId)> = found
            .into_iter()
            .filter_map(|(k, id)| id.map(|id| (k, id)))
            .collect();
        match found.as_slice() {
            [(k, id)] => Ok(self.spread.global(*k, *id)),
            [] => Err(Error::ledger(
                &self.path,
                format!("no ledger of the group has operation {spec:?}"),
                "give it as NAME:ID (the ledger's name, then its id or account/op_type/key)",
            )),
            several => {
                let names: Vec<&str> = several
                    .iter()
                    .map(|(k, _)| &*self.members[*k].name)
                    .collect();
                Err(Error::Usage(format!(
                    "{spec:?} names an operation in {} ledgers ({}): say which, as NAME:{spec}",
                    several.len(),
                    names.join(", ")
                )))
            }
        }
    }

    fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        let found = self.every(|_, ledger| ledger.operation_by_key(account, op_type, key))?;
        Ok(found
            .into_iter()
            .find_map(|(k, id)| id.map(|id| self.spread.global(k, id))))
    }

    fn clusters(&self, query: &Query, now: DateTime<Utc>, top: usize) -> Result<Clusters> {
        let each = self.each(
            |slot| query.for_ledger(&slot.name),
            |_, ledger, query| ledger.clusters(query, now, top * CLUSTER_DEPTH),
        )?;
        Ok(merge::clusters(
            each.into_iter().map(|(_, c)| c).collect(),
            now,
            top,
        ))
    }
}

impl History for Group {
    /// The member's detail, with the group's id and its origin.
    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        let (slot, local) = self.route(id)?;
        let mut detail = slot
            .with(|ledger| ledger.detail(local))
            .map_err(|e| Error::in_ledger(&slot.name, e))?;
        detail.operation.id = id;
        detail.operation.origin = Some(Origin {
            ledger: slot.name.clone(),
            id: local,
        });
        for decision in &mut detail.decisions {
            decision.op_id = id;
        }
        for probe in &mut detail.probes {
            probe.probe.op_id = id;
        }
        Ok(detail)
    }

    fn audit_count(&self, _seek: Seek<DecisionId>) -> Result<usize> {
        Err(self.no_audit())
    }

    fn audit_page(&self, _seek: Seek<DecisionId>, _limit: usize) -> Result<Vec<Decision>> {
        Err(self.no_audit())
    }

    fn verify_chain(&self) -> Result<ChainVerdict> {
        Err(self.no_audit())
    }
}
