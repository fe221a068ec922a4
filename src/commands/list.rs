//! `settle list`: operations matching a filter, newest first, as a table for
//! people or json, jsonl and csv for scripts. Reads a page first (its rows
//! measure the table), then pages on up to a limit, or streams the rest of
//! a whole list, so `--all` over millions of rows holds one page in memory.

use std::io;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::output::{PAGE, colour, emit, emit_page, left_out, rows_wanted};
use super::table::TableWidths;
use crate::cli::config::Config;
use crate::cli::{ListArgs, ListFormat};
use crate::domain::{OperationRow, Sort, SortKey};
use crate::error::{Error, Result};
use crate::export::{OPERATION_CSV_HEADER, operation_csv, operation_json};
use crate::query::Query;
use crate::store::{Ledger, Seek};

pub fn run(args: &ListArgs, config: &Config, now: DateTime<Utc>) -> Result<()> {
    let query = query_of(args.queue, &args.state, args.filter.as_deref())?;
    // `ledger:NAME` picks ledgers of the set; each is asked the rest.
    let set = args.set.picked(&query);
    let query = query.without_ledgers();
    let want = rows_wanted(args.format, args.limit, args.all, 100);
    let sort = match args.sort.as_deref() {
        Some(s) => Sort::parse(s).map_err(crate::error::Error::Usage)?,
        None => Sort::default(),
    };
    let list = super::several::List {
        query: &query,
        sort,
        format: args.format,
        want,
        colour: colour(config),
        now,
    };
    // A group stays a group when its filter picks one of its ledgers:
    // the rows still name it.
    let ([one], false) = (&set.members[..], args.set.is_several()) else {
        return list.merged(&set);
    };
    let ledger = super::ledger_arg::open_for_reading(&one.address)?;
    write_sorted_list(&ledger, &query, sort, args.format, want, list.colour, now)
}

/// The query of `--queue`, `--state` and `--filter` together.
pub(super) fn query_of(queue: bool, state: &[String], filter: Option<&str>) -> Result<Query> {
    let mut query = match filter {
        Some(f) => Query::parse(f)?,
        None => Query::default(),
    };
    query.queue |= queue;
    if !state.is_empty() {
        query = query.and(Query::parse(&format!("state:{}", state.join(",")))?);
    }
    Ok(query)
}

/// Prints up to `want` operations matching `query`, a page at a time. When
/// it stops before the end, stderr says how many were left out, in every
/// format: a pipeline never loses rows silently.
pub(crate) fn write_list(
    ledger: &Ledger,
    query: &Query,
    format: ListFormat,
    want: usize,
    colour: bool,
    now: DateTime<Utc>,
) -> Result<()> {
    write_sorted_list(ledger, query, Sort::default(), format, want, colour, now)
}

/// [`write_list`] in `sort`'s order (`--sort`).
fn write_sorted_list(
    ledger: &Ledger,
    query: &Query,
    sort: Sort,
    format: ListFormat,
    want: usize,
    colour: bool,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut widths: Option<TableWidths> = None;
    let mut seek = Seek::First;
    let mut shown = 0usize;
    let mut more = false;
    while shown < want {
        let take = PAGE.min(want - shown);
        let mut page = ledger.sorted_page(query, sort, seek, take + 1, now)?;
        more = page.len() > take;
        page.truncate(take);
        let widths = widths.get_or_insert_with(|| TableWidths::of(page.iter(), now));
        let out = Out {
            format,
            widths,
            colour,
            now,
        };
        let open = out.rows(&page, shown == 0)?;
        shown += page.len();
        match page.last() {
            Some(last) if more && open && want == usize::MAX => {
                // The rest as one statement, which the database streams
                // while these rows are written, instead of a page at a time.
                shown += out.stream(ledger, query, sort, sort.key_of(last))?;
                more = false;
                break;
            }
            Some(last) if more && open => seek = Seek::After(sort.key_of(last)),
            _ => break,
        }
    }
    let empty = shown == 0;
    if format == ListFormat::Json {
        emit(|out| writeln!(out, "{}", if empty { "[]" } else { "\n]" }))?;
    }
    // `want == 0` reads nothing, so only a count can tell whether rows match.
    let stopped_early = shown >= want && (more || want == 0);
    let total = if stopped_early {
        usize::try_from(ledger.count(query, now)?).unwrap_or(usize::MAX)
    } else {
        shown
    };
    if total > shown {
        eprintln!("{}", left_out("operations", shown, total));
    } else if empty && format == ListFormat::Table {
        eprintln!("settle: no operations match");
    }
    Ok(())
}

/// How rows are written to stdout.
struct Out<'a> {
    format: ListFormat,
    widths: &'a TableWidths,
    colour: bool,
    now: DateTime<Utc>,
}

impl Out<'_> {
    /// Writes `rows`, the list's opening before them when `first`; false
    /// when stdout was closed (`settle list | head`).
    fn rows(&self, rows: &[OperationRow], first: bool) -> Result<bool> {
        emit_page(|out| {
            for (i, row) in rows.iter().enumerate() {
                let header = first && i == 0;
                match self.format {
                    ListFormat::Table if header => self.widths.header(out)?,
                    ListFormat::Csv if header => writeln!(out, "{OPERATION_CSV_HEADER}")?,
                    ListFormat::Json => write!(out, "{}", if header { "[\n  " } else { ",\n  " })?,
                    _ => {}
                }
                match self.format {
                    ListFormat::Table => self.widths.row(out, row, self.now, self.colour)?,
                    ListFormat::Json => write!(out, "{}", operation_json(row, self.now))?,
                    ListFormat::Jsonl => writeln!(out, "{}", operation_json(row, self.now))?,
                    ListFormat::Csv => writeln!(out, "{}", operation_csv(row, self.now))?,
                }
            }
            Ok(())
        })
    }

    /// Writes every match after `after`, streamed and written a page at a
    /// time; how many were written.
    fn stream(&self, ledger: &Ledger, query: &Query, sort: Sort, after: SortKey) -> Result<usize> {
        let mut batch = Vec::with_capacity(PAGE);
        let (mut shown, mut closed) = (0, false);
        let streamed = ledger.for_each_sorted_row(query, sort, Some(after), self.now, |row| {
            batch.push(row);
            if batch.len() == PAGE {
                if !self.rows(&batch, false)? {
                    closed = true;
                    // Stops the read; not reported, as a closed pipe never is.
                    return Err(Error::Io {
                        path: PathBuf::from("<stdout>"),
                        doing: "writing output".to_string(),
                        source: io::ErrorKind::BrokenPipe.into(),
                    });
                }
                shown += batch.len();
                batch.clear();
            }
            Ok(())
        });
        match streamed {
            Err(_) if closed => return Ok(shown),
            other => other?,
        };
        if self.rows(&batch, false)? {
            shown += batch.len();
        }
        Ok(shown)
    }
}
