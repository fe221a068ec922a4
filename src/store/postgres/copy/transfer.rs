//! A whole ledger out of and into PostgreSQL for `settle copy`: each table
//! read in id order as neutral values (an instant as RFC 3339 text, a flag
//! as a boolean), as tolerantly as the reads take a service's types, and
//! written into an empty ledger with `COPY`, all at once (one transaction,
//! or [`super::staged`]'s move into a ledger created for the copy),
//! the identity sequences moved past the copied ids so the next service
//! insert does not collide. Decisions keep their stored chain hashes.

use std::path::Path;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Row, Transaction};

use super::defer::{Deferred, streamed};
use super::table_in::{copy_in, insert_op_types};
use crate::error::Result;
use crate::store::backend::Transfer;
use crate::store::cells::CellRead;
use crate::store::copy::{
    CopyReport, EachRow, Held, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty,
};
use crate::store::drills::present;
use crate::store::postgres::cells::Cells;
use crate::store::postgres::conn::Pg;

impl Transfer for Pg {
    fn copy_rows(&self, table: &Table, each: &mut EachRow) -> Result<u64> {
        let doing = format!("reading {} for the copy", table.name);
        let mut client = self.client.borrow_mut();
        let err = |e| crate::store::postgres::error::pg_error(&self.shown, &doing, e);
        if table.console {
            let present: bool = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table.name])
                .and_then(|r| r.try_get(0))
                .map_err(err)?;
            if !present {
                return Ok(0);
            }
        }
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            table.column_list(),
            table.name,
            table.order
        );
        // Receiving and decoding the rows take as long as writing them
        // elsewhere: a thread of their own does them while this one
        // writes, a batch at a time, a few batches ahead at most. Each
        // written batch goes back to that thread, which frees its text:
        // freed here, every cell made the allocator lock the reader's
        // arena, a fifth of a copy's time.
        let client: &mut postgres::Client = &mut client;
        std::thread::scope(|s| {
            let (batches, ready) = std::sync::mpsc::sync_channel(BATCHES_AHEAD);
            let (spent, written_back) = std::sync::mpsc::channel();
            let reader = s.spawn(move || read_table(client, &sql, table, batches, written_back));
            let mut written = Ok(());
            'batches: for batch in ready {
                for values in &batch {
                    written = each(values);
                    if written.is_err() {
                        break 'batches;
                    }
                }
                // The reader is gone only once it sent its last batch.
                let _ = spent.send(batch);
            }
            // Dropped, the channel stops the reader at its next batch.
            let read = reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            written?;
            read.map_err(err)
        })
    }

    /// Each table through one `COPY … FROM STDIN` (the contracts of op
    /// types through INSERT, which may meet some already there), so a
    /// million rows cost one round trip, not a million. Into a ledger
    /// created for this copy, the tables are staged and loaded side by
    /// side, their keys built after their rows ([`Pg::copy_staged`]), or,
    /// for a role that may not make the staging schema, in one transaction
    /// with the keys built after the rows ([`Deferred`]); into one that was
    /// there already, in one transaction with every key in place, as a
    /// service may be using it.
    fn copy_from(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        let fresh = self.created_here;
        let copied = if fresh && self.may_stage()? {
            self.copy_staged(source)
        } else {
            self.copy_in_one(source, fresh)
        };
        if copied.is_ok() {
            // It holds rows now, which someone may be reading.
            self.created_here = false;
        }
        copied
    }
}

impl Pg {
    /// The copy in one transaction; with `fresh` (a ledger created for it),
    /// its tables locked and their keys lifted until the rows are in.
    fn copy_in_one(&mut self, source: &mut RowSource, fresh: bool) -> Result<CopyReport> {
        let shown = self.shown.clone();
        let err = |doing: &str, e| crate::store::postgres::error::pg_error(&shown, doing, e);
        let mut tx = self
            .client
            .get_mut()
            .transaction()
            .map_err(|e| err("starting the copy", e))?;
        // A table takes as long as the source takes to read it: the
        // session's statement timeout is for a console's reads.
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(|e| err("starting the copy", e))?;
        let deferred = if fresh {
            Some(Deferred::lift_locked(
                &mut tx,
                &shown,
                &super::defer::lifted(),
            )?)
        } else {
            None
        };
        let empty = "copy into a new ledger: a new file, or an empty database (`settle init`)";
        refuse_unless_empty(&shown, empty, |table| {
            tx.query_one(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), &[])
                .and_then(|r| r.try_get(0))
                .map_err(|e| err("looking whether the destination is empty", e))
        })?;
        let mut report = CopyReport::default();
        for table in &TABLES {
            let n = if streamed(table) {
                copy_in(&mut tx, &shown, table, source)?
            } else {
                copy_small(&mut tx, &shown, table, source)?
            };
            report.tables.push((table.name, n));
        }
        crate::store::postgres::schema::queue::mark_all(&mut tx, deferred.is_none())
            .map_err(|e| err("recording the queue and each operation's events", e))?;
        if let Some(deferred) = deferred {
            deferred.build_all(&mut tx, &shown)?;
        }
        move_identities(&mut tx, &shown, &report)?;
        tx.commit().map_err(|e| err("committing the copy", e))?;
        Ok(report)
    }
}

/// A table a copy does not stream: the op types' contracts through
/// INSERT, a drilled ledger's verdicts into the table their first makes.
pub(crate) fn copy_small(
    tx: &mut Transaction<'_>,
    shown: &Path,
    table: &Table,
    source: &mut RowSource,
) -> Result<u64> {
    if !table.made_on_use {
        return insert_op_types(tx, shown, table, source);
    }
    let mut held = Held::read(table, source)?;
    if held.is_empty() {
        return Ok(0);
    }
    let err = |e| crate::store::postgres::error::pg_error(shown, "making settle_drills", e);
    if !present(&mut &mut *tx).map_err(err)? {
        tx.batch_execute(&crate::store::postgres::drills::ddl())
            .map_err(err)?;
    }
    copy_in(tx, shown, table, &mut held.source())
}

/// Moves each identity past the ids the copy wrote: rows went in with
/// their ids, and the identities would hand out 1 next and collide.
pub(crate) fn move_identities(
    tx: &mut Transaction<'_>,
    shown: &Path,
    report: &CopyReport,
) -> Result<()> {
    let made = |t: &Table| !t.made_on_use || report.rows(t.name) > 0;
    for table in TABLES.iter().filter(|t| t.identity && made(t)) {
        tx.execute(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{0}', 'id'), max(id))
                 FROM {0} HAVING max(id) IS NOT NULL",
                table.name
            ),
            &[],
        )
        .map_err(|e| {
            crate::store::postgres::error::pg_error(shown, "moving the ids past the copied rows", e)
        })?;
    }
    Ok(())
}

/// Rows a batch holds, and how many batches the reader may be ahead of
/// the writer: memory stays bounded whatever the table's size.
const BATCH: usize = 1024;
const BATCHES_AHEAD: usize = 4;

type Batch = Vec<Vec<Value>>;

/// Streams `sql`'s rows as values to `batches`, in one query, filling again
/// the batches that come back `written`; stops when the receiver is gone
/// (the writer failed). Returns how many rows it read.
fn read_table(
    client: &mut postgres::Client,
    sql: &str,
    table: &Table,
    batches: std::sync::mpsc::SyncSender<Batch>,
    written: std::sync::mpsc::Receiver<Batch>,
) -> std::result::Result<u64, postgres::Error> {
    let next = || {
        written
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH))
    };
    // A whole table streams for as long as the destination takes to
    // write it: the reads' statement timeout is for pages, not this.
    let mut tx = client.transaction()?;
    tx.batch_execute("SET LOCAL statement_timeout = 0")?;
    let mut n = 0;
    {
        let mut rows = tx.query_raw(sql, std::iter::empty::<i64>())?;
        // A batch that came back is filled again row by row, each cell's
        // text written into the room the last one left.
        let mut batch = next();
        let mut filled = 0;
        while let Some(row) = rows.next()? {
            if filled == batch.len() {
                batch.push(Vec::with_capacity(table.columns.len()));
            }
            fill(&row, table, &mut batch[filled])?;
            filled += 1;
            n += 1;
            if filled == BATCH {
                let full = std::mem::replace(&mut batch, next());
                filled = 0;
                if batches.send(full).is_err() {
                    return Ok(n);
                }
            }
        }
        batch.truncate(filled);
        if !batch.is_empty() && batches.send(batch).is_err() {
            return Ok(n);
        }
    }
    tx.commit()?;
    Ok(n)
}

/// A row of the copy as tolerantly as the reads take it, into `out` (the
/// row it held before lends its text's room): an `integer` id, a time kept
/// as text, a flag stored as 1/0 come back as values, and a cell its
/// column does not allow comes back as its text, for the destination to
/// take or refuse by name.
fn fill(
    row: &Row,
    table: &Table,
    out: &mut Vec<Value>,
) -> std::result::Result<(), postgres::Error> {
    let mut cells = Cells::new(row);
    out.resize(table.columns.len(), Value::Null);
    for (i, ((column, kind), slot)) in table.columns.iter().zip(out.iter_mut()).enumerate() {
        if cells.is_null(i)? {
            *slot = Value::Null;
            continue;
        }
        match kind {
            Kind::Int => match cells.opt_int(i, column)? {
                Some(n) => *slot = Value::Int(n),
                None => text(&mut cells, i, column, slot)?,
            },
            // A timestamptz in the form settle writes, a service's
            // fractions kept; a time stored as text, as written.
            Kind::Text | Kind::Time => text(&mut cells, i, column, slot)?,
            Kind::Bool => *slot = Value::Bool(cells.bool(i, column)?),
        }
    }
    Ok(())
}

/// Cell `i` as text into `slot`, in the room of the text it held.
fn text(
    cells: &mut Cells<'_>,
    i: usize,
    column: &'static str,
    slot: &mut Value,
) -> std::result::Result<(), postgres::Error> {
    let mut room = match std::mem::replace(slot, Value::Null) {
        Value::Text(room) => room,
        _ => String::new(),
    };
    if cells.text_into(i, column, &mut room)? {
        *slot = Value::Text(room);
    }
    Ok(())
}
