//! Performs the model's [`Effect`]s against the ledger and answers with
//! [`Msg`]s: plain blocking functions over owned values, so the same code
//! runs on the screen's thread today, in the test kit, and on a worker
//! thread that sends its answers back later. Never touches the terminal
//! and never sees the `App`.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::app::{
    DecisionOutcome, DecisionResult, Effect, ListId, LoadedDrill, Msg, PageRows, PageSource,
};
use crate::domain::{DecisionDraft, DecisionId, OperationId};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;

// What goes to a worker thread and what comes back must be `Send`; this
// fails to compile the day either type stops being so.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Effect>();
    send::<Msg>();
};

/// Performs one effect against the ledger at `now` and returns what came of
/// it, synchronously: the test kit's way. The console spreads the same
/// calls over workers ([`crate::workers`], [`crate::counter`]).
pub fn perform(ledger: &mut Ledger, now: DateTime<Utc>, effect: Effect) -> Vec<Msg> {
    match effect {
        Effect::RecordDecisions(drafts) => vec![record(ledger, now, &drafts)],
        Effect::Count(lists) => {
            vec![count(ledger, &lists, now).unwrap_or_else(|e| Msg::LoadFailed(first_line(&e)))]
        }
        Effect::LoadClusters { query, top } => vec![clusters(ledger, &query, top, now)],
        read_effect => read(ledger, now, read_effect),
    }
}

/// Performs a read (a page, a detail, the form's details) and answers
/// with its messages. A read cancelled through the ledger's interrupt
/// handle answers nothing: a newer request took its place.
pub fn read(ledger: &Ledger, now: DateTime<Utc>, effect: Effect) -> Vec<Msg> {
    let failed = |e: Error| match e {
        Error::Interrupted { .. } => Vec::new(),
        e => vec![Msg::LoadFailed(first_line(&e))],
    };
    match effect {
        Effect::LoadPage {
            ticket,
            source,
            fetch,
            merge,
            limit,
        } => {
            let rows = match *source {
                PageSource::Operations { list, query } => ledger
                    .page(&query, fetch.map(OperationId), limit, now)
                    .map(|rows| PageRows::Operations { list, rows }),
                PageSource::Audit => ledger
                    .audit_page(fetch.map(DecisionId), limit)
                    .map(PageRows::Audit),
            };
            match rows {
                Ok(rows) => vec![Msg::PageLoaded {
                    ticket,
                    fetch,
                    merge,
                    limit,
                    rows,
                }],
                Err(Error::Interrupted { .. }) => Vec::new(),
                Err(e) => vec![Msg::PageFailed {
                    ticket,
                    message: first_line(&e),
                }],
            }
        }
        Effect::LoadDetail(id) => match ledger.detail(id) {
            Ok(d) => vec![Msg::DetailLoaded(Box::new(d))],
            Err(e) => failed(e),
        },
        Effect::LoadFormDetails(ids) => {
            let mut details = Vec::new();
            let mut out = Vec::new();
            for id in ids {
                match ledger.detail(id) {
                    Ok(d) => details.push(d),
                    Err(e @ Error::Interrupted { .. }) => return failed(e),
                    Err(e) => out.push(Msg::LoadFailed(first_line(&e))),
                }
            }
            out.insert(0, Msg::FormDetailsLoaded(details));
            out
        }
        Effect::FindDrillCase(key) => {
            match ledger.operation_by_key(&key.account, &key.op_type, &key.key) {
                Ok(id) => vec![Msg::DrillCaseFound(key, id)],
                Err(e) => failed(e),
            }
        }
        Effect::RecordDecisions(_) | Effect::Count(_) | Effect::LoadClusters { .. } => {
            vec![Msg::LoadFailed("internal: not a read".to_string())]
        }
    }
}

/// Records the drafts, each in its own guarded transaction, and says how
/// each ended.
pub fn record(ledger: &mut Ledger, now: DateTime<Utc>, drafts: &[DecisionDraft]) -> Msg {
    let mut busy = None;
    let results = drafts
        .iter()
        .map(|draft| DecisionResult {
            op: draft.op_id,
            // After one busy answer the lock is still held: the rest would
            // each wait the whole timeout for the same.
            outcome: busy.clone().unwrap_or_else(|| {
                let o = outcome(ledger.record_decision(draft, now));
                if matches!(o, DecisionOutcome::Busy { .. }) {
                    busy = Some(o.clone());
                }
                o
            }),
        })
        .collect();
    Msg::DecisionsRecorded(results)
}

/// What the model needs to know of one attempt to record a decision.
fn outcome(result: Result<crate::domain::DecisionReceipt>) -> DecisionOutcome {
    match result {
        Ok(receipt) => DecisionOutcome::Recorded(receipt),
        Err(Error::Refused { rule, reason, .. }) => DecisionOutcome::Refused {
            rule: rule.label().to_string(),
            reason,
        },
        Err(Error::VersionConflict {
            state,
            found,
            last_writer,
            ..
        }) => DecisionOutcome::Conflict {
            state,
            found,
            last_writer,
        },
        Err(Error::Busy { waited, .. }) => DecisionOutcome::Busy { waited },
        Err(e) => DecisionOutcome::Failed(first_line(&e)),
    }
}

/// The state counts and each list's total at `now`.
pub fn count(ledger: &Ledger, lists: &[(ListId, Query)], now: DateTime<Utc>) -> Result<Msg> {
    let counts = ledger.state_counts(now)?;
    let mut totals = Vec::new();
    for (id, query) in lists {
        // The unfiltered lists are already counted by state; only a filter
        // needs a scan of its own.
        let n = if query.is_empty() {
            counts.total
        } else if *query == Query::queue() {
            counts.queue()
        } else {
            ledger.count(query, now)?
        };
        totals.push((*id, query.clone(), n));
    }
    Ok(Msg::CountsLoaded {
        counts,
        lists: totals,
    })
}

/// The operations matching `query` grouped for the Clusters view.
pub fn clusters(ledger: &Ledger, query: &Query, top: usize, now: DateTime<Utc>) -> Msg {
    match ledger.clusters(query, now, top) {
        Ok(c) => Msg::ClustersLoaded(c),
        Err(e) => Msg::LoadFailed(format!("grouping the queue: {}", first_line(&e))),
    }
}

/// Reads and analyses a `--drill` file once, at start; the view shows the
/// same report as `settle drill show`, or why the file could not be read.
pub fn read_drill(path: &Path) -> LoadedDrill {
    LoadedDrill {
        path: path.display().to_string(),
        analysis: crate::drill::load(path)
            .map(Box::new)
            .map_err(|e| first_line(&e)),
    }
}

/// Errors carry a "what to do" line for the CLI; the status line has room
/// for the first.
pub fn first_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
