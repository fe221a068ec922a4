//! Building the read model from the whole ledger: operations and then
//! events copied in id-range chunks, each chunk its own short transaction
//! on the read model's file (the ledger is only read, in one short read
//! transaction per chunk, so its WAL can checkpoint between them), the
//! counts, and the indexes last, on the copied rows. Nothing here takes the
//! ledger's write lock: a service writing meanwhile never waits.

use rusqlite::{Connection, params};

use super::ddl::{COPIED, COPIED_O, FORMAT, TABLE_NAMES, TABLES, indexes};
use super::texts;
use crate::store::open::Progress;

/// Operations, or events, copied per transaction.
const CHUNK: i64 = 100_000;

/// Empties the read model's file and builds it again from the ledger
/// (attached as `l`), calling `progress` before each chunk and index.
/// Leaves it marked complete, with the watermarks the catch-up goes on from.
pub(super) fn build(
    k: &Connection,
    ledger_id: &str,
    progress: &mut dyn FnMut(Progress),
) -> rusqlite::Result<()> {
    reset(k)?;
    let max = |sql: &str| k.query_row(sql, [], |r| r.get::<_, Option<i64>>(0));
    let (ops_min, ops_max) = k.query_row(
        "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM l.operations",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )?;
    // What the service had written when the build began: events after
    // these, and attempts and decisions, are the catch-up's.
    let events = max("SELECT max(id) FROM l.events")?.unwrap_or(0);
    let attempts = max("SELECT max(rowid) FROM l.attempts")?.unwrap_or(0);
    let decisions = max("SELECT max(id) FROM l.decisions")?.unwrap_or(0);
    k.execute(
        "INSERT INTO settle_marks (one, format, ledger_id, ops, events, attempts, decisions,
             complete) VALUES (1, ?1, ?2, ?3, 0, ?4, ?5, 0)",
        params![FORMAT, ledger_id, ops_min - 1, attempts, decisions],
    )?;
    let ops_chunks = chunks(ops_max - ops_min + 1);
    let event_chunks = chunks(events);
    let index_list = indexes();
    let mut total = (ops_chunks + event_chunks) as usize + index_list.len() + 1;
    let mut done = 0;
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
    let mut from = ops_min - 1;
    let mut n = 0;
    while let Some(to) = chunk_end(k, "l.operations", from, i64::MAX)? {
        n += 1;
        step(
            format!("copying operations ({n} of {ops_chunks})"),
            progress,
        );
        copy_operations(k, from, to)?;
        from = to;
    }
    let mut from = 0;
    n = 0;
    while let Some(to) = chunk_end(k, "l.events", from, events)? {
        n += 1;
        step(format!("indexing events ({n} of {event_chunks})"), progress);
        copy_events(k, from, to)?;
        from = to;
    }
    for (name, on) in index_list {
        step(format!("building index {name}"), progress);
        k.execute_batch(&format!("CREATE INDEX IF NOT EXISTS {name} ON {on};"))?;
    }
    let total = step("counting operations per state".to_string(), progress);
    k.execute_batch(
        "BEGIN IMMEDIATE;
         DELETE FROM settle_state_counts;
         INSERT INTO settle_state_counts (state, n)
             SELECT coalesce(state, ''), COUNT(*) FROM settle_ops GROUP BY 1;
         UPDATE settle_marks SET complete = 1;
         COMMIT;",
    )?;
    progress(Progress {
        step: "read model built".to_string(),
        done: total,
        total,
    });
    Ok(())
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

/// The last id of the next chunk of `table` after `from`, up to `until`;
/// None when there is none.
fn chunk_end(k: &Connection, table: &str, from: i64, until: i64) -> rusqlite::Result<Option<i64>> {
    k.query_row(
        &format!(
            "SELECT max(id) FROM (SELECT id FROM {table} WHERE id > ?1 AND id <= ?2
                 ORDER BY id LIMIT ?3)"
        ),
        params![from, until, CHUNK],
        |r| r.get(0),
    )
}

/// Copies the operations with ids in `(from, to]`, with each one's attempt
/// count and last error (through the attempts primary key), and indexes
/// what `err:` and free text read of them.
fn copy_operations(k: &Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    let tx = k.unchecked_transaction()?;
    tx.execute(
        &format!(
            "INSERT INTO settle_ops (id, {COPIED}, attempts, last_error, last_attempt,
                 last_attempt_at)
             SELECT o.id, {COPIED_O}, coalesce(a.n, 0), a.error, a.last, a.started_at
             FROM l.operations o LEFT JOIN (
                 SELECT op_id, COUNT(*) AS n, error, started_at, MAX(attempt) AS last
                 FROM l.attempts
                 WHERE op_id > ?1 AND op_id <= ?2 GROUP BY op_id
             ) a ON a.op_id = o.id
             WHERE o.id > ?1 AND o.id <= ?2"
        ),
        params![from, to],
    )?;
    texts::index_ops(&tx, from, to)?;
    tx.execute("UPDATE settle_marks SET ops = ?1", [to])?;
    tx.commit()
}

/// Indexes the events with ids in `(from, to]` by operation, and keeps
/// each operation's newest event.
fn copy_events(k: &Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    let tx = k.unchecked_transaction()?;
    tx.execute(
        "INSERT OR IGNORE INTO settle_events (op_id, event_id)
         SELECT op_id, id FROM l.events WHERE id > ?1 AND id <= ?2 AND op_id IS NOT NULL",
        params![from, to],
    )?;
    // One MAX() in the aggregate: SQLite takes `event` from that row.
    tx.execute(
        "UPDATE settle_ops AS r SET last_event = e.event, last_event_id = e.newest
         FROM (SELECT op_id, event, MAX(id) AS newest FROM l.events
               WHERE id > ?1 AND id <= ?2 GROUP BY op_id) AS e
         WHERE r.id = e.op_id AND (r.last_event_id IS NULL OR e.newest > r.last_event_id)",
        params![from, to],
    )?;
    tx.execute("UPDATE settle_marks SET events = ?1", [to])?;
    tx.commit()
}
