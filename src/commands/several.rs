//! `list` and `count` over several ledgers (one incident, many services):
//! each ledger opened through the store and its first page read in its own
//! thread, then a k-way merge of their already-sorted pages by the same key
//! a single ledger sorts by, a page per ledger in memory at most. A ledger
//! that fails is named on stderr and the others still print; the command
//! then ends with [`Error::LedgersUnread`].

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::output::{PAGE, emit, emit_page, left_out};
use super::table::TableWidths;
use crate::cli::ListFormat;
use crate::cli::ledger_set::{LedgerSet, Member};
use crate::domain::{OperationRow, Seek, Sort, SortKey};
use crate::error::{Error, Result};
use crate::export::{OPERATION_CSV_HEADER, csv_line, operation_csv, operation_json};
use crate::query::Query;
use crate::store::Ledger;
use crate::text::{pad, sanitize};

/// What a list asks, whichever ledgers it reads.
pub(super) struct List<'a> {
    pub query: &'a Query,
    pub sort: Sort,
    pub format: ListFormat,
    /// At most this many rows in all, and read from each ledger.
    pub want: usize,
    pub colour: bool,
    pub now: DateTime<Utc>,
}

/// One ledger's place in the merge: the rows of its page not yet written,
/// and where its next page starts (None: it has no more).
struct Cursor<'a> {
    member: &'a Member,
    ledger: Ledger,
    rows: VecDeque<OperationRow>,
    after: Option<SortKey>,
    read: usize,
}

impl List<'_> {
    /// One page of `ledger` after `seek`, at most `want - read` rows (and one
    /// more, to know whether more follow).
    fn page(&self, ledger: &Ledger, seek: Seek<SortKey>, read: usize) -> Result<Page> {
        let take = PAGE.min(self.want - read);
        let mut rows = ledger.sorted_page(self.query, self.sort, seek, take + 1, self.now)?;
        let more = rows.len() > take;
        rows.truncate(take);
        let after = if more {
            rows.last().map(|r| self.sort.key_of(r))
        } else {
            None
        };
        Ok(Page { rows, after })
    }

    /// Opens each ledger and reads its first page, in parallel; a ledger
    /// that fails is said on stderr and left out.
    fn open<'m>(&self, set: &'m LedgerSet, failed: &mut Vec<String>) -> Vec<Cursor<'m>> {
        let opened: Vec<Result<(Ledger, Page)>> = std::thread::scope(|scope| {
            let reads: Vec<_> = set
                .members
                .iter()
                .map(|member| {
                    scope.spawn(move || {
                        let ledger = super::ledger_arg::open_for_reading(&member.address)?;
                        let page = self.page(&ledger, Seek::First, 0)?;
                        Ok((ledger, page))
                    })
                })
                .collect();
            reads.into_iter().map(joined).collect()
        });
        let mut cursors = Vec::new();
        for (member, opened) in set.members.iter().zip(opened) {
            match opened {
                Ok((ledger, page)) => cursors.push(Cursor {
                    member,
                    ledger,
                    read: page.rows.len(),
                    rows: page.rows.into(),
                    after: page.after,
                }),
                Err(e) => unread(member, &e, failed),
            }
        }
        cursors
    }

    /// Prints the ledgers' rows merged in one order, each naming its
    /// ledger; see the module's comment for what a failure does.
    pub(super) fn merged(&self, set: &LedgerSet) -> Result<()> {
        let mut failed = Vec::new();
        let mut cursors = self.open(set, &mut failed);
        let widths = TableWidths::of(cursors.iter().flat_map(|c| c.rows.iter()), self.now);
        let name_width = set.members.iter().map(|m| m.name.chars().count()).max();
        let out = Out {
            list: self,
            widths: &widths,
            name_width: name_width.unwrap_or(0).max(6),
        };
        let mut batch: Vec<(&str, OperationRow)> = Vec::with_capacity(PAGE);
        let (mut shown, mut open) = (0usize, true);
        while shown + batch.len() < self.want {
            self.refill(&mut cursors, &mut failed);
            let Some(next) = self.first(&cursors) else {
                break;
            };
            let cursor = &mut cursors[next];
            if let Some(row) = cursor.rows.pop_front() {
                batch.push((cursor.member.name.as_str(), row));
            }
            if batch.len() == PAGE {
                open = out.rows(&batch, shown == 0)?;
                shown += batch.len();
                batch.clear();
                if !open {
                    break;
                }
            }
        }
        if open {
            out.rows(&batch, shown == 0)?;
            shown += batch.len();
        }
        let empty = shown == 0;
        if self.format == ListFormat::Json {
            emit(|out| writeln!(out, "{}", if empty { "[]" } else { "\n]" }))?;
        }
        self.say_left_out(&cursors, shown, &mut failed)?;
        if empty && self.format == ListFormat::Table {
            eprintln!("settle: no operations match");
        }
        match failed.is_empty() {
            true => Ok(()),
            false => Err(Error::LedgersUnread {
                failed,
                of: set.members.len(),
            }),
        }
    }

    /// Reads the next page of each ledger whose page is written out and
    /// that has more; one that fails is said and dropped.
    fn refill(&self, cursors: &mut Vec<Cursor<'_>>, failed: &mut Vec<String>) {
        let mut i = 0;
        while i < cursors.len() {
            let c = &mut cursors[i];
            if let (true, Some(after)) = (c.rows.is_empty(), c.after.clone()) {
                match self.page(&c.ledger, Seek::After(after), c.read) {
                    Ok(page) => {
                        c.read += page.rows.len();
                        c.rows = page.rows.into();
                        c.after = page.after;
                    }
                    Err(e) => {
                        unread(c.member, &e, failed);
                        cursors.remove(i);
                        continue;
                    }
                }
            }
            i += 1;
        }
    }

    /// The cursor whose next row comes first in the sort (on a tie, the
    /// ledger given first).
    fn first(&self, cursors: &[Cursor<'_>]) -> Option<usize> {
        let mut best: Option<(usize, SortKey)> = None;
        for (i, c) in cursors.iter().enumerate() {
            let Some(row) = c.rows.front() else { continue };
            let key = self.sort.key_of(row);
            let better = best
                .as_ref()
                .is_none_or(|(_, b)| self.sort.compare(&key, b).is_lt());
            if better {
                best = Some((i, key));
            }
        }
        best.map(|(i, _)| i)
    }

    /// When rows were left out (a ledger still has some), stderr says how
    /// many in all, counted in each ledger.
    fn say_left_out(
        &self,
        cursors: &[Cursor<'_>],
        shown: usize,
        failed: &mut Vec<String>,
    ) -> Result<()> {
        let more = cursors
            .iter()
            .any(|c| !c.rows.is_empty() || c.after.is_some() || self.want == 0);
        if !more || self.want == usize::MAX {
            return Ok(());
        }
        let mut total = 0usize;
        for c in cursors {
            match c.ledger.count(self.query, self.now) {
                Ok(n) => total += usize::try_from(n).unwrap_or(usize::MAX),
                Err(e) => unread(c.member, &e, failed),
            }
        }
        if total > shown {
            eprintln!("{}", left_out("operations", shown, total));
        }
        Ok(())
    }
}

/// A page read and where the next one starts.
struct Page {
    rows: Vec<OperationRow>,
    after: Option<SortKey>,
}

/// How merged rows are written: the single ledger's row with the ledger's
/// name first.
struct Out<'a> {
    list: &'a List<'a>,
    widths: &'a TableWidths,
    name_width: usize,
}

impl Out<'_> {
    /// Writes `rows`, the list's opening first when `first`; false when
    /// stdout was closed.
    fn rows(&self, rows: &[(&str, OperationRow)], first: bool) -> Result<bool> {
        let now = self.list.now;
        emit_page(|out| {
            for (i, (name, row)) in rows.iter().enumerate() {
                let header = first && i == 0;
                match self.list.format {
                    ListFormat::Table if header => {
                        write!(out, "{}  ", pad("LEDGER", self.name_width))?;
                        self.widths.header(out)?;
                    }
                    ListFormat::Csv if header => writeln!(out, "ledger,{OPERATION_CSV_HEADER}")?,
                    ListFormat::Json => write!(out, "{}", if header { "[\n  " } else { ",\n  " })?,
                    _ => {}
                }
                match self.list.format {
                    ListFormat::Table => {
                        write!(out, "{}  ", pad(&sanitize(name), self.name_width))?;
                        self.widths.row(out, row, now, self.list.colour)?;
                    }
                    ListFormat::Json => write!(out, "{}", named_json(name, row, now))?,
                    ListFormat::Jsonl => writeln!(out, "{}", named_json(name, row, now))?,
                    ListFormat::Csv => writeln!(
                        out,
                        "{},{}",
                        csv_line(&[name.to_string()]),
                        operation_csv(row, now)
                    )?,
                }
            }
            Ok(())
        })
    }
}

/// [`operation_json`] with the ledger's name as its first field.
fn named_json(name: &str, row: &OperationRow, now: DateTime<Utc>) -> Value {
    let mut named = Map::new();
    named.insert("ledger".to_string(), json!(name));
    if let Value::Object(fields) = operation_json(row, now) {
        named.extend(fields);
    }
    Value::Object(named)
}

/// Says on stderr that `member` could not be read, and why.
pub(super) fn unread(member: &Member, e: &Error, failed: &mut Vec<String>) {
    eprintln!("settle: {}: {e}", sanitize(&member.name));
    if !failed.contains(&member.name) {
        failed.push(member.name.clone());
    }
}

/// A reading thread's answer; one that panicked is an error, not a crash.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    handle.join().unwrap_or_else(|_| {
        Err(Error::Usage(
            "a ledger's reading thread stopped unexpectedly".to_string(),
        ))
    })
}

/// `settle count`: each ledger's count, in parallel, then the total (one
/// ledger: its count alone, as a number).
pub(super) fn count(set: &LedgerSet, query: &Query, json: bool, now: DateTime<Utc>) -> Result<()> {
    // `ledger:NAME` picks ledgers of the set; each is asked the rest.
    let several = set.is_several();
    let (set, query) = (&set.picked(query), &query.without_ledgers());
    let counted: Vec<Result<i64>> = std::thread::scope(|scope| {
        let reads: Vec<_> = set
            .members
            .iter()
            .map(|member| {
                scope.spawn(move || {
                    super::ledger_arg::open_for_reading(&member.address)?.count(query, now)
                })
            })
            .collect();
        reads.into_iter().map(joined).collect()
    });
    if !several && counted.iter().any(Result::is_err) {
        // One ledger's error is the command's, as it always was.
        return counted.into_iter().try_for_each(|c| c.map(drop));
    }
    let mut failed = Vec::new();
    let mut each = Vec::new();
    for (member, n) in set.members.iter().zip(counted) {
        match n {
            Ok(n) => each.push((member.name.as_str(), n)),
            Err(e) => unread(member, &e, &mut failed),
        }
    }
    let total: i64 = each.iter().map(|(_, n)| n).sum();
    if json {
        let ledgers: Vec<Value> = each
            .iter()
            .map(|(name, n)| json!({"ledger": name, "count": n}))
            .collect();
        super::output::emit_json(&json!({"ledgers": ledgers, "total": total}))?;
    } else if !several {
        emit(|out| writeln!(out, "{total}"))?;
    } else {
        let width = each.iter().map(|(n, _)| n.chars().count()).max();
        let width = width.unwrap_or(0).max(5);
        emit(|out| {
            for (name, n) in &each {
                writeln!(out, "{}  {n:>10}", pad(&sanitize(name), width))?;
            }
            writeln!(out, "{}  {total:>10}", pad("total", width))
        })?;
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(Error::LedgersUnread {
            failed,
            of: set.members.len(),
        }),
    }
}
