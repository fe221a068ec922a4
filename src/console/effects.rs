//! Performs the model's [`Effect`]s against the ledger and answers with
//! [`Msg`]s: plain blocking functions over owned values, so the same code
//! runs on the screen's thread today, in the test kit, and on a worker
//! thread that sends its answers back later. Never touches the terminal
//! and never sees the `App`.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::app::effect::Read;
use crate::app::window::{Fetch, Merge};
use crate::app::{
    DecisionOutcome, DecisionResult, Effect, ExportRequest, ExportRows, ListId, LoadedDrill, Msg,
    PageRows, PageSource, ScanRead, Ticket,
};
use crate::domain::{DecisionDraft, DecisionId, OperationId, SortKey};
use crate::error::{Error, Result};
use crate::export::{self, FileFormat, Written};
use crate::query::Query;
use crate::store::{Ledger, Seek};

mod bulk;
pub mod drill;
mod line;
pub mod probe;

pub use line::first_line;

// What goes to a worker thread and what comes back must be `Send`; this
// fails to compile the day either type stops being so.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Effect>();
    send::<Msg>();
};

/// Performs a read (a page, a detail, the form's details) and answers
/// with its messages. A read cancelled through the ledger's interrupt
/// handle answers nothing: a newer request took its place.
pub fn read(ledger: &Ledger, now: DateTime<Utc>, read: Read) -> Vec<Msg> {
    let failed = |e: Error| match e {
        Error::Interrupted { .. } => Vec::new(),
        e => vec![Msg::LoadFailed(first_line(&e))],
    };
    match read {
        Read::LoadPage {
            ticket,
            source,
            fetch,
            merge,
            limit,
        } => page(ledger, now, ticket, *source, fetch, merge, limit),
        Read::LoadDetail(id) => match ledger.detail(id) {
            Ok(d) => vec![Msg::DetailLoaded(Box::new(d))],
            Err(e) => failed(e),
        },
        Read::LoadFormDetails(ids) => {
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
        Read::Export(request) => vec![export_rows(ledger, now, &request)],
        // Its work is done by the asking: the reader interrupted the preview.
        Read::CancelBulkPreview => Vec::new(),
        Read::PreviewBulk { query, template } => {
            match bulk::preview(ledger, &query, template, now) {
                Ok(p) => vec![Msg::BulkPreviewed(Box::new(p))],
                Err(e) => failed(e),
            }
        }
        Read::FindDrillCase(key) => {
            match ledger.operation_by_key(&key.account, &key.op_type, &key.key) {
                Ok(id) => vec![Msg::DrillCaseFound(key, id)],
                Err(e) => failed(e),
            }
        }
        Read::ListProbeTargets(query) => match probe::list_targets(ledger, &query, now) {
            Ok(ids) => vec![Msg::ProbeTargetsListed(ids)],
            Err(e) => failed(e),
        },
    }
}

/// One page of a list or of the audit trail, tagged with the ticket that
/// asked for it; an interrupted page answers nothing.
fn page(
    ledger: &Ledger,
    now: DateTime<Utc>,
    ticket: Ticket,
    source: PageSource,
    fetch: Fetch,
    merge: Merge,
    limit: usize,
) -> Vec<Msg> {
    let rows = match source {
        PageSource::Operations { list, query, sort } => ledger
            .sorted_page(&query, sort, fetch.clone().map(operation_key), limit, now)
            .map(|rows| PageRows::Operations { list, rows }),
        PageSource::Audit => ledger
            .audit_page(fetch.clone().map(|k| DecisionId(k.id)), limit)
            .map(PageRows::Audit),
        PageSource::Scan { list, query, read } => scan(ledger, now, list, &query, read, limit),
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

/// One slice of a scanned filter, or the rows it holds read again.
fn scan(
    ledger: &Ledger,
    now: DateTime<Utc>,
    list: ListId,
    query: &Query,
    read: ScanRead,
    limit: usize,
) -> Result<PageRows> {
    let (rows, place) = match read {
        ScanRead::Step(from) => {
            let step = ledger.scan_step(query, from, limit, now)?;
            (step.rows, Some(step.place))
        }
        ScanRead::Reread(above, through) => (
            ledger.range_page(query, (above, through), limit, now)?,
            None,
        ),
    };
    Ok(PageRows::Scanned {
        list,
        rows,
        read,
        place,
    })
}

/// Writes an export's rows to a new file, streamed from the ledger (one
/// statement for operations, a page of decisions at a time): a million
/// rows never sit in memory. The file appears whole or not at all, and an
/// existing one is never replaced.
pub fn export_rows(ledger: &Ledger, now: DateTime<Utc>, request: &ExportRequest) -> Msg {
    let path = &request.path;
    // A relative name lands in the console's working directory: say which.
    let shown = std::path::absolute(path)
        .unwrap_or_else(|_| path.clone())
        .display()
        .to_string();
    let written = export::write_new_file(path, |out| match &request.rows {
        ExportRows::Operations { query, marks } => {
            write_operations(ledger, now, query, marks, request.format, path, out)
        }
        ExportRows::Audit => write_decisions(ledger, request.format, path, out),
    });
    let outcome = match written {
        Ok(Written::Rows(n)) => Ok(n),
        Ok(Written::Exists) => Err(format!(
            "export: {shown} exists; nothing written: press e and type another name"
        )),
        Err(e) => Err(format!(
            "export to {shown} failed, nothing written: {}",
            first_line(&e)
        )),
    };
    Msg::Exported {
        path: shown,
        outcome,
    }
}

fn write_operations(
    ledger: &Ledger,
    now: DateTime<Utc>,
    query: &Query,
    marks: &[OperationId],
    format: FileFormat,
    path: &Path,
    out: &mut dyn std::io::Write,
) -> Result<u64> {
    let io = |e| export::write_failed(path, e);
    if format == FileFormat::Csv {
        writeln!(out, "{}", export::OPERATION_CSV_HEADER).map_err(io)?;
    }
    let mut n = 0;
    ledger.for_each_row(query, now, |row| {
        // Marks come from a BTreeSet, so they are sorted.
        if !marks.is_empty() && marks.binary_search(&row.id).is_err() {
            return Ok(());
        }
        n += 1;
        match format {
            FileFormat::Csv => writeln!(out, "{}", export::operation_csv(&row, now)),
            FileFormat::Jsonl => writeln!(out, "{}", export::operation_json(&row, now)),
        }
        .map_err(io)
    })?;
    Ok(n)
}

fn write_decisions(
    ledger: &Ledger,
    format: FileFormat,
    path: &Path,
    out: &mut dyn std::io::Write,
) -> Result<u64> {
    const PAGE: usize = 1000;
    let io = |e| export::write_failed(path, e);
    if format == FileFormat::Csv {
        writeln!(out, "{}", export::DECISION_CSV_HEADER).map_err(io)?;
    }
    let mut n = 0;
    let mut seek = Seek::First;
    loop {
        let page = ledger.audit_page(seek, PAGE)?;
        for d in &page {
            match format {
                FileFormat::Csv => writeln!(out, "{}", export::decision_csv(d)),
                FileFormat::Jsonl => writeln!(out, "{}", export::decision_json(d)),
            }
            .map_err(io)?;
        }
        n += page.len() as u64;
        match page.last() {
            Some(last) if page.len() == PAGE => seek = Seek::After(last.id),
            _ => return Ok(n),
        }
    }
}

pub use bulk::record_bulk;

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
    LoadedDrill::new(
        path.display().to_string(),
        crate::drill::load(path)
            .map(Box::new)
            .map_err(|e| first_line(&e)),
    )
}

/// The window's plain key as the store's typed one.
fn operation_key(key: crate::app::window::RowKey) -> SortKey {
    SortKey {
        value: key.value,
        id: OperationId(key.id),
    }
}
