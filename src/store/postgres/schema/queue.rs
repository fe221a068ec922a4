//! The triage queue's members on PostgreSQL, kept in settle's own table
//! `settle_queue` instead of a partial index on `operations`: an index
//! whose condition names `state` makes every one of the service's
//! completions a non-HOT update, the largest share of what settle cost its
//! writes. settle's own reads catch the table up, in transactions of
//! their own; nothing runs inside a service's transaction.
//!
//! A read takes an operation as a member when `settle_queue` holds it at
//! or below the mark `op_mark`, or when its id is above the mark, and
//! always checks the operation's real state: a member that left never
//! shows, and an operation not yet recorded is read by its primary key.
//! What the table must hold (the invariant the catch-up keeps): every
//! operation at or below `op_mark` in a queue state. An operation enters
//! the queue by an insert (new ids pass the mark only after they are
//! recorded) or by an update of an existing row: the service's updates
//! come with an event (recorded through the events mark), settle's own
//! decisions add their operation in the decision's transaction, and a
//! sweep of a slice of `operations` each round finds any other change
//! within one pass over the ledger.
//!
//! Ids are taken before commit, so a mark must never pass an id a
//! transaction still running may commit below it. A round records the
//! newest ids it sees (`next_op`, `next_event`); a round at least
//! [`SETTLED`] later records the server's next transaction id
//! (`next_xmax`): every transaction that took an id up to the recorded
//! ones has its transaction id by then (it takes one on its insert, a
//! moment after the id); a later round that finds every transaction
//! before `next_xmax` ended records what lies between the marks and the
//! recorded ids, and moves the marks to them.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};

use super::event_ops::{self, MARK as EVENT_MARK};
use crate::error::Result;
use crate::store::filter::queue_candidate_words;
use crate::store::postgres::conn::Pg;

/// The states an operation in the triage queue can have, and reserved,
/// spelled with constants as SQLite's partial queue index spells them.
pub(crate) fn queue_candidates_sql(column: &str) -> String {
    format!("{column} IN ({})", queue_candidate_words())
}

/// settle's queue table and its marks (one row).
pub(crate) const QUEUE_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS settle_queue (
    id       bigint PRIMARY KEY,
    added_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS settle_queue_mark (
    op_mark    bigint NOT NULL,
    event_mark bigint NOT NULL,
    sweep_at   bigint NOT NULL DEFAULT 0,
    next_op    bigint,
    next_event bigint,
    next_since timestamptz,
    next_xmax  xid8
);
"#;

/// The time between recording the newest ids and the transaction id that
/// bounds the transactions holding them.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// How often a session catches the table up, at most.
const EVERY: Duration = Duration::from_secs(1);

/// How many ids of `operations` a round's sweep reads.
pub(crate) const SWEEP: i64 = 20_000;

/// The events at or below the newest when the table was made that are
/// read again: a transaction still running then may commit one of them.
const EVENTS_BEFORE: i64 = 10_000;

/// Two settle processes catching up at once: the second skips its round.
const CATCH_UP_LOCK: i64 = 0x05e7_71ea_0a0e;

/// The queue's mark as statements name it: [`Pg::pinned`] puts its value
/// in its place before they run.
pub(crate) const OP_MARK: &str = "(SELECT op_mark FROM settle_queue_mark)";

/// The condition on `o` that the operation is, or may be, a member: its
/// id is above the mark, or in the table. One probe of the table's primary
/// key a row, so a filter an index of the service's serves (an account)
/// reads its own rows and never the whole queue.
pub(crate) fn members_sql() -> String {
    format!("(o.id > {OP_MARK} OR EXISTS (SELECT 1 FROM settle_queue sq WHERE sq.id = o.id))")
}

/// The queue's ids in `order` (`ASC` or `DESC`), those in the table at or
/// below the mark and every id above it, as a join to `o` named `q`;
/// `bound` (an operator and a placeholder) keeps the ids beyond a page's
/// seek key inside both halves, where the planner merges the two index
/// walks and stops at the page's end. Without the bound inside, every page
/// would read the queue from its start.
pub(crate) fn members_join(order: &str, bound: Option<(&str, &str)>) -> String {
    let beyond =
        |column: &str| bound.map_or(String::new(), |(op, p)| format!(" AND {column} {op} {p}"));
    format!(
        "JOIN ((SELECT sq.id FROM settle_queue sq
            WHERE sq.id <= {OP_MARK}{} ORDER BY sq.id {order})
          UNION ALL (SELECT so.id FROM operations so
            WHERE so.id > {OP_MARK}{} ORDER BY so.id {order})) q
        ON q.id = o.id",
        beyond("sq.id"),
        beyond("so.id"),
    )
}

/// The statements that fill the marks' row when the table is new: the
/// op mark at 0 (every operation read by id until adoption fills it), and
/// the events' table's fill at 0, to end at the first event mark
/// ([`super::event_ops`]). Nothing when
/// the row is there: the aggregate is a subquery's, since an aggregate
/// with no `GROUP BY` gives its row whatever the `WHERE`, and a second row
/// would stop every catch-up round.
pub(crate) fn first_mark() -> String {
    format!(
        "INSERT INTO settle_queue_mark (op_mark, event_mark, fill_end)
         SELECT 0, newest.mark, newest.mark FROM
             (SELECT greatest(coalesce(max(id), 0) - {EVENTS_BEFORE}, 0) AS mark FROM events) newest
         WHERE NOT EXISTS (SELECT 1 FROM settle_queue_mark)"
    )
}

/// Records the queue's members among the ids above `from` up to and
/// including `to`.
fn record_ops(db: &mut impl GenericClient, from: i64, to: i64) -> Result<u64, postgres::Error> {
    db.execute(
        &format!(
            "INSERT INTO settle_queue (id) SELECT id FROM operations
             WHERE id > $1 AND id <= $2 AND {}
             ON CONFLICT DO NOTHING",
            queue_candidates_sql("state")
        ),
        &[&from, &to],
    )
}

/// Records every operation and event of a ledger `tx` itself filled (a
/// copy into an empty one) and moves every mark past them, in that same
/// transaction: no other may hold one of those ids, and a read-only look
/// at the copy then reads settle's tables rather than group every event
/// above marks still at 0. `keyed` is false while settle's tables have
/// their keys lifted, to be built after.
pub(crate) fn mark_all(
    tx: &mut postgres::Transaction<'_>,
    keyed: bool,
) -> Result<(), postgres::Error> {
    let (ops, events) = newest(tx)?;
    record_ops(tx, 0, ops)?;
    if keyed {
        super::event_ops::record(tx, 0, events)?;
    } else {
        super::event_ops::record_unkeyed(tx, events)?;
    }
    mark(tx, ops, events)
}

/// The queue's members among every operation of a table nobody else
/// writes (a copy's, staged while its keys are lifted).
pub(crate) fn record_all(db: &mut impl GenericClient) -> Result<u64, postgres::Error> {
    record_ops(db, 0, i64::MAX)
}

/// Moves every mark past the newest operation and event, once the queue
/// and each operation's events hold them all ([`record_all`],
/// [`super::event_ops::record_unkeyed`]).
pub(crate) fn mark_past_all(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    let (ops, events) = newest(tx)?;
    mark(tx, ops, events)
}

/// The newest operation's and event's ids.
fn newest(tx: &mut postgres::Transaction<'_>) -> Result<(i64, i64), postgres::Error> {
    let row = tx.query_one(
        "SELECT (SELECT coalesce(max(id), 0) FROM operations)::bigint,
                (SELECT coalesce(max(id), 0) FROM events)::bigint",
        &[],
    )?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

fn mark(tx: &mut postgres::Transaction<'_>, ops: i64, events: i64) -> Result<(), postgres::Error> {
    tx.execute(
        "UPDATE settle_queue_mark SET op_mark = greatest(op_mark, $1),
             event_mark = greatest(event_mark, $2), event_map = greatest(event_map, $2)",
        &[&ops, &events],
    )?;
    Ok(())
}

/// Adoption's fill: the members up to the newest id once every transaction
/// that may hold a smaller one has ended, a batch per transaction, then the
/// op mark there. Gives up (the mark stays, reads stay correct) when a
/// transaction stays open past `patience`.
pub(crate) fn fill(client: &mut Client, patience: Duration) -> Result<(), postgres::Error> {
    let newest: i64 = client
        .query_one("SELECT coalesce(max(id), 0)::bigint FROM operations", &[])?
        .try_get(0)?;
    // The moment between an insert's id and its transaction id; a
    // transaction that took its id long before its insert is the sweep's.
    std::thread::sleep(Duration::from_millis(200));
    let until = Instant::now() + patience;
    let xmax: String = client
        .query_one("SELECT pg_snapshot_xmax(pg_current_snapshot())::text", &[])?
        .try_get(0)?;
    loop {
        let ended: bool = client
            .query_one(
                "SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::text::xid8",
                &[&xmax],
            )?
            .try_get(0)?;
        if ended {
            break;
        }
        if Instant::now() >= until {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut from: i64 = client
        .query_one("SELECT op_mark FROM settle_queue_mark", &[])?
        .try_get(0)?;
    while from < newest {
        let to = (from + 50_000).min(newest);
        let mut tx = client.transaction()?;
        record_ops(&mut tx, from, to)?;
        tx.execute(
            "UPDATE settle_queue_mark SET op_mark = $1 WHERE op_mark < $1",
            &[&to],
        )?;
        tx.commit()?;
        from = to;
    }
    Ok(())
}

/// One round of the catch-up (see the file's notes), in one transaction;
/// `settled` is [`SETTLED`] outside tests, `sweep` the ids it sweeps.
pub(crate) fn catch_up(
    client: &mut Client,
    settled: Duration,
    sweep: i64,
) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    let ours: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&CATCH_UP_LOCK])?
        .try_get(0)?;
    if !ours {
        return Ok(());
    }
    let row = tx.query_one(
        "SELECT op_mark, event_mark, sweep_at, next_op, next_event,
             next_xmax IS NOT NULL,
             coalesce(now() - next_since >= make_interval(secs => $1), false),
             coalesce(pg_snapshot_xmin(pg_current_snapshot()) >= next_xmax, false)
         FROM settle_queue_mark FOR UPDATE",
        &[&settled.as_secs_f64()],
    )?;
    let (op_mark, event_mark, sweep_at): (i64, i64, i64) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    let next: Option<(i64, i64)> = row.try_get::<_, Option<i64>>(3)?.zip(row.try_get(4)?);
    let (bounded, old, ended): (bool, bool, bool) =
        (row.try_get(5)?, row.try_get(6)?, row.try_get(7)?);
    let mut op_mark_now = op_mark;
    match next {
        None => {
            tx.execute(
                "UPDATE settle_queue_mark SET
                     next_op = (SELECT coalesce(max(id), 0) FROM operations),
                     next_event = (SELECT coalesce(max(id), 0) FROM events),
                     next_since = now(), next_xmax = NULL",
                &[],
            )?;
        }
        Some(_) if !bounded && old => {
            tx.execute(
                "UPDATE settle_queue_mark SET next_xmax = pg_snapshot_xmax(pg_current_snapshot())",
                &[],
            )?;
        }
        Some((next_op, next_event)) if bounded && ended => {
            advance(&mut tx, (op_mark, next_op), (event_mark, next_event))?;
            op_mark_now = op_mark_now.max(next_op);
        }
        Some(_) => {}
    }
    if sweep > 0 {
        let to = (sweep_at + sweep).min(op_mark_now);
        record_ops(&mut tx, sweep_at, to)?;
        prune(&mut tx, sweep_at, to)?;
        let again = if to >= op_mark_now { 0 } else { to };
        tx.execute("UPDATE settle_queue_mark SET sweep_at = $1", &[&again])?;
    }
    tx.commit()
}

/// Drops the members with ids in `(from, to]` (the sweep's slice) that
/// left the queue, unless added in the last minute (see [`add`]). A slice
/// per round, as the sweep reads: pruning the whole table each round read
/// every member and its operation once a second in every writable
/// session. A member that left costs a read until its
/// slice comes round; it never shows, since reads check the state.
fn prune(db: &mut impl GenericClient, from: i64, to: i64) -> Result<u64, postgres::Error> {
    db.execute(
        &format!(
            "DELETE FROM settle_queue q WHERE q.id > $1 AND q.id <= $2
             AND q.added_at < now() - interval '1 minute'
             AND NOT EXISTS
                 (SELECT 1 FROM operations o WHERE o.id = q.id AND {})",
            queue_candidates_sql("o.state")
        ),
        &[&from, &to],
    )
}

/// Records the operations above the op mark up to the recorded one, and
/// those of the events between the marks, with those events' operations
/// ([`super::event_ops`]), then moves both marks there: every transaction
/// that may hold one of those ids has ended.
fn advance(
    tx: &mut postgres::Transaction<'_>,
    ops: (i64, i64),
    events: (i64, i64),
) -> Result<(), postgres::Error> {
    if ops.1 > ops.0 {
        record_ops(tx, ops.0, ops.1)?;
    }
    tx.execute(
        &format!(
            "INSERT INTO settle_queue (id) SELECT o.id FROM operations o
             WHERE o.id IN (SELECT e.op_id FROM events e WHERE e.id > $1 AND e.id <= $2)
               AND {}
             ON CONFLICT DO NOTHING",
            queue_candidates_sql("o.state")
        ),
        &[&events.0, &events.1],
    )?;
    if events.1 > events.0 {
        event_ops::record(tx, events.0, events.1)?;
        tx.execute(event_ops::KEEP_WHOLE, &[&events.0, &events.1])?;
    }
    tx.execute(
        "UPDATE settle_queue_mark SET op_mark = greatest(op_mark, $1),
             event_mark = greatest(event_mark, $2),
             next_op = NULL, next_event = NULL, next_since = NULL, next_xmax = NULL",
        &[&ops.1, &events.1],
    )?;
    Ok(())
}

/// Adds `op` to the table, in the transaction of a decision of settle's
/// that may move it into the queue, with no event for the catch-up to see.
/// A member already there is written again: a prune that read the
/// operation's state before this commits then waits for the row and,
/// finding it just added, keeps it (it prunes only members added a while
/// ago).
pub(crate) fn add(db: &mut impl GenericClient, op: i64) -> Result<(), postgres::Error> {
    db.execute(
        "INSERT INTO settle_queue (id) VALUES ($1)
         ON CONFLICT (id) DO UPDATE SET added_at = now()",
        &[&op],
    )?;
    Ok(())
}

impl Pg {
    /// `sql` with the marks it names ([`OP_MARK`], [`EVENT_MARK`]) read
    /// now and written in as numbers. As subqueries the planner cannot see
    /// them: it took a third of `events` to lie above the event mark and
    /// hashed it, where the catch-up keeps a few thousand there
    /// (docs/benchmarks.md, *Behind the code*). A mark
    /// only moves up, so one read before the statement is at or below the
    /// mark it runs with, and every read stays whole: below a mark the
    /// tables hold every member and event, above it the ledger is read
    /// directly.
    pub(crate) fn pinned<'s>(&self, sql: &'s str, doing: &str) -> Result<Cow<'s, str>> {
        if !sql.contains(OP_MARK) && !sql.contains(EVENT_MARK) {
            return Ok(Cow::Borrowed(sql));
        }
        let marks = self
            .client
            .borrow_mut()
            .query_opt("SELECT op_mark, event_mark FROM settle_queue_mark", &[])
            .and_then(|row| {
                row.map(|r| {
                    Ok::<_, postgres::Error>((r.try_get::<_, i64>(0)?, r.try_get::<_, i64>(1)?))
                })
                .transpose()
            })
            .map_err(|e| self.err(doing, e))?;
        // No row yet (an adoption that has not begun): the subqueries
        // read nothing either way.
        Ok(match marks {
            Some((op, event)) => Cow::Owned(
                sql.replace(OP_MARK, &op.to_string())
                    .replace(EVENT_MARK, &event.to_string()),
            ),
            None => Cow::Borrowed(sql),
        })
    }

    /// A round of the catch-up, at most every [`EVERY`], on a session that
    /// may write settle's tables. A round that fails is left for the next:
    /// the reads stay correct without it, only a change without an event
    /// waits for the sweep.
    pub(crate) fn keep_queue(&self) {
        if !self.queue || self.read_only || self.reader_in_recovery.get() {
            return;
        }
        if self.queue_kept.get().is_some_and(|at| at.elapsed() < EVERY) {
            return;
        }
        self.queue_kept.set(Some(Instant::now()));
        let _ = catch_up(&mut self.client.borrow_mut(), SETTLED, SWEEP);
    }
}
