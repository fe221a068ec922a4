//! Building the read model from the whole ledger: events and then
//! operations copied in id-range chunks, each chunk its own short transaction
//! on the read model's file (the ledger is only read, in one short read
//! transaction per chunk, so its WAL can checkpoint between them), the
//! counts, and the indexes last, on the copied rows. Nothing here takes the
//! ledger's write lock: a service writing meanwhile never waits.
//! Each chunk moves the marks with it, so a build that was stopped (the
//! console quit, the process killed) goes on from its last chunk.

use rusqlite::{Connection, params};

use super::ddl::{COPIED, COPIED_O, FORMAT, TABLE_NAMES, TABLES, indexes};
use super::{bulk, texts};
use crate::store::open::Progress;

/// Operations, or events, copied per transaction.
const CHUNK: i64 = 100_000;

/// Builds the read model from the ledger (attached as `l`): goes on from
/// `stopped`, the operations and events marks of a build of this ledger
/// that was stopped, else empties the file and starts over. Calls
/// `progress` before each chunk and index. Leaves it marked complete, with
/// the watermarks the catch-up goes on from. The caller holds the build
/// lock.
pub(super) fn build(
    k: &Connection,
    ledger_id: &str,
    stopped: Option<(i64, i64)>,
    progress: &mut dyn FnMut(Progress),
) -> rusqlite::Result<()> {
    bulk::relax(k)?;
    let (ops_min, ops_max) = k.query_row(
        "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM l.operations",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )?;
    // What the service had written when the build began: events after
    // these, and attempts and decisions, are the catch-up's. A build that
    // goes on keeps its first marks for attempts and decisions, and copies
    // the events written since it stopped.
    let events: i64 = k.query_row("SELECT coalesce(max(id), 0) FROM l.events", [], |r| {
        r.get(0)
    })?;
    let (ops_from, events_from) = match stopped {
        Some(marks) => marks,
        None => start(k, ledger_id, ops_min)?,
    };
    let ops_chunks = chunks(ops_max - ops_min + 1);
    let event_chunks = chunks(events);
    let index_list = indexes();
    let mut total = (ops_chunks + event_chunks) as usize + index_list.len() + 1;
    // Whole chunks a stopped build copied.
    let ops_done = (ops_from - ops_min + 1).max(0) / CHUNK;
    let events_done = events_from.max(0) / CHUNK;
    let mut done = (ops_done + events_done) as usize;
    let mut step = |what: String, progress: &mut dyn FnMut(Progress)| {
        // The service may add operations while they are copied.
        total = total.max(done + 1);
        progress(Progress {
            step: what,
            done,
            total,
        });
        done += 1;
        total
    };
    // Events first: each operation then finds its newest event through
    // the copied index as it is copied, instead of every copied row being
    // written a second time with it (a third of the build at 1M).
    let mut from = events_from;
    let mut n = events_done;
    // A stopped build that had begun the operations: those copied are
    // given their newer events as the events are indexed.
    let copied_before = ops_from >= ops_min;
    while let Some(to) = chunk_end(k, "l.events", from, events)? {
        n += 1;
        step(format!("indexing events ({n} of {event_chunks})"), progress);
        copy_events(k, from, to, copied_before)?;
        from = to;
    }
    (from, n) = (ops_from, ops_done);
    while let Some(to) = chunk_end(k, "l.operations", from, i64::MAX)? {
        n += 1;
        step(
            format!("copying operations ({n} of {ops_chunks})"),
            progress,
        );
        copy_operations(k, from, to)?;
        from = to;
    }
    bulk::sorting(k)?;
    for (name, on) in index_list {
        step(format!("building index {name}"), progress);
        k.execute_batch(&format!("CREATE INDEX IF NOT EXISTS {name} ON {on};"))?;
    }
    let total = step("counting operations per state".to_string(), progress);
    complete(k)?;
    progress(Progress {
        step: "read model built".to_string(),
        done: total,
        total,
    });
    Ok(())
}

/// Syncs what the build wrote, then counts per state and marks the model
/// complete: a model marked complete is on disk whole.
fn complete(k: &Connection) -> rusqlite::Result<()> {
    bulk::harden(k)?;
    k.execute_batch(COMPLETE)
}

/// The counts per state, and the mark that the model is complete. The
/// inner count walks the state index in its order; grouping by the
/// `coalesce` itself sorted every row again (10M: 5.5 s against 0.9 s).
/// The outer one folds a NULL state into `''`.
const COMPLETE: &str = "BEGIN IMMEDIATE;
     DELETE FROM settle_state_counts;
     INSERT INTO settle_state_counts (state, n)
         SELECT coalesce(state, ''), sum(n)
         FROM (SELECT state, COUNT(*) AS n FROM settle_ops GROUP BY state)
         GROUP BY 1;
     UPDATE settle_marks SET complete = 1;
     COMMIT;";

/// Empties the file and marks a build of `ledger_id` begun: nothing
/// copied yet, attempts and decisions after the ledger's newest left to
/// the catch-up. Returns where the copies start.
fn start(k: &Connection, ledger_id: &str, ops_min: i64) -> rusqlite::Result<(i64, i64)> {
    reset(k)?;
    let max = |sql: &str| k.query_row(sql, [], |r| r.get::<_, Option<i64>>(0));
    let attempts = max("SELECT max(rowid) FROM l.attempts")?.unwrap_or(0);
    let decisions = max("SELECT max(id) FROM l.decisions")?.unwrap_or(0);
    k.execute(
        "INSERT INTO settle_marks (one, format, ledger_id, ops, events, attempts,
             decisions, complete, boot) VALUES (1, ?1, ?2, ?3, 0, ?4, ?5, 0, ?6)",
        params![
            FORMAT,
            ledger_id,
            ops_min - 1,
            attempts,
            decisions,
            bulk::boot()
        ],
    )?;
    Ok((ops_min - 1, 0))
}

fn chunks(n: i64) -> i64 {
    (n.max(0) + CHUNK - 1) / CHUNK
}

/// Drops whatever the file holds and creates the empty tables.
fn reset(k: &Connection) -> rusqlite::Result<()> {
    let mut sql = String::from("BEGIN IMMEDIATE;");
    for table in TABLE_NAMES {
        sql.push_str(&format!("DROP TABLE IF EXISTS {table};"));
    }
    sql.push_str(TABLES);
    sql.push_str("COMMIT;");
    k.execute_batch(&sql)
}

/// The last id of the next chunk of `table` after `from`, up to `until`:
/// the last row within [`CHUNK`] ids of the next one (steps down the
/// primary key, where counting the chunk's rows read each of them); None
/// when there is none. Gaps in the ids only make a chunk smaller.
fn chunk_end(k: &Connection, table: &str, from: i64, until: i64) -> rusqlite::Result<Option<i64>> {
    let bound = |sql: &str, from: i64, until: i64| {
        k.prepare_cached(&format!(
            "SELECT {sql}(id) FROM {table} WHERE id > ?1 AND id <= ?2"
        ))?
        .query_row(params![from, until], |r| r.get::<_, Option<i64>>(0))
    };
    let Some(next) = bound("min", from, until)? else {
        return Ok(None);
    };
    bound("max", from, next.saturating_add(CHUNK - 1).min(until))
}

/// Copies the operations with ids in `(from, to]`, with each one's attempt
/// count and last attempt (through the attempts primary key) and its
/// newest event indexed so far (through `settle_events`), and indexes
/// what `err:` and free text read of them.
fn copy_operations(k: &Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    let tx = k.unchecked_transaction()?;
    tx.execute(
        &format!(
            "INSERT INTO settle_ops (id, {COPIED}, attempts, last_error, last_attempt,
                 last_attempt_at, last_event, last_event_id)
             SELECT o.id, {COPIED_O},
                 (SELECT COUNT(*) FROM l.attempts n WHERE n.op_id = o.id),
                 a.error, a.attempt, a.started_at, e.event, e.id
             FROM l.operations o
             LEFT JOIN l.attempts a ON a.op_id = o.id
                 AND a.attempt = (SELECT MAX(attempt) FROM l.attempts m WHERE m.op_id = o.id)
             LEFT JOIN l.events e ON e.id =
                 (SELECT MAX(event_id) FROM settle_events s WHERE s.op_id = o.id)
             WHERE o.id > ?1 AND o.id <= ?2"
        ),
        params![from, to],
    )?;
    texts::index_ops(&tx, from, to)?;
    tx.execute("UPDATE settle_marks SET ops = ?1", [to])?;
    tx.commit()
}

/// Indexes the events with ids in `(from, to]` by operation; with
/// `copied`, also moves the newest event of the operations already copied.
fn copy_events(k: &Connection, from: i64, to: i64, copied: bool) -> rusqlite::Result<()> {
    let tx = k.unchecked_transaction()?;
    tx.execute(
        "INSERT OR IGNORE INTO settle_events (op_id, event_id)
         SELECT op_id, id FROM l.events WHERE id > ?1 AND id <= ?2 AND op_id IS NOT NULL",
        params![from, to],
    )?;
    if copied {
        // One MAX() in the aggregate: SQLite takes `event` from that row.
        tx.execute(
            "UPDATE settle_ops AS r SET last_event = e.event, last_event_id = e.newest
             FROM (SELECT op_id, event, MAX(id) AS newest FROM l.events
                   WHERE id > ?1 AND id <= ?2 GROUP BY op_id) AS e
             WHERE r.id = e.op_id AND (r.last_event_id IS NULL OR e.newest > r.last_event_id)",
            params![from, to],
        )?;
    }
    tx.execute("UPDATE settle_marks SET events = ?1", [to])?;
    tx.commit()
}
