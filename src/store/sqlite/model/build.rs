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
use super::flush::Flusher;
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
    let flusher = bulk::relax(k)?;
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
    // written a second time with it.
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
    let copy = copy_sql(k)?;
    while let Some(to) = chunk_end(k, "l.operations", from, i64::MAX)? {
        n += 1;
        step(
            format!("copying operations ({n} of {ops_chunks})"),
            progress,
        );
        copy_operations(k, &copy, from, to)?;
        from = to;
    }
    bulk::sorting(k)?;
    for (name, on) in index_list {
        step(format!("building index {name}"), progress);
        k.execute_batch(&format!("CREATE INDEX IF NOT EXISTS {name} ON {on};"))?;
    }
    let total = step("counting operations per state".to_string(), progress);
    complete(k, total, flusher, progress)
}

/// Syncs what the build wrote, then counts per state and marks the model
/// complete: a model marked complete is on disk whole. Then empties the
/// WAL: the build leaves up to 64 MB there, which the next process to
/// open the file reads back whole, in its first frame, when the builder's
/// process ended without closing it (killed, or a background adoption
/// left behind by a console that quit). Says it is
/// built, the last of `total` steps.
fn complete(
    k: &Connection,
    total: usize,
    flusher: Option<Flusher>,
    progress: &mut dyn FnMut(Progress),
) -> rusqlite::Result<()> {
    bulk::harden(k, flusher)?;
    k.execute_batch(COMPLETE)?;
    // The model's alone (`main`): the ledger, attached read-only, is the
    // service's. A reader holding the file open keeps what it may still
    // read; the catch-up's checkpoints then carry on as usual.
    k.query_row("PRAGMA main.wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    progress(Progress {
        step: "read model built".to_string(),
        done: total,
        total,
    });
    Ok(())
}

/// The counts per state, and the mark that the model is complete. The
/// inner count walks the state index in its order; grouping by the
/// `coalesce` itself sorted every row again.
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

/// Copies the operations with ids in `(from, to]` with `copy`
/// ([`copy_sql`]), and indexes what `err:` and free text read of them.
fn copy_operations(k: &Connection, copy: &str, from: i64, to: i64) -> rusqlite::Result<()> {
    let tx = k.unchecked_transaction()?;
    tx.execute(copy, params![from, to])?;
    texts::index_ops(&tx, from, to)?;
    tx.execute("UPDATE settle_marks SET ops = ?1", [to])?;
    tx.commit()
}

/// The copy of the operations with ids in `(?1, ?2]`, with each one's
/// attempt count and last attempt (through the attempts primary key,
/// [`last_attempt`]) and its newest event indexed so far (through
/// `settle_events`). Written once a build: which join finds the last
/// attempt depends on the ledger's table.
fn copy_sql(k: &Connection) -> rusqlite::Result<String> {
    Ok(format!(
        "INSERT INTO settle_ops (id, {COPIED}, attempts, last_error, last_attempt,
             last_attempt_at, last_event, last_event_id)
         SELECT o.id, {COPIED_O},
             (SELECT COUNT(*) FROM l.attempts n WHERE n.op_id = o.id),
             a.error, a.attempt, a.started_at, e.event, e.id
         FROM l.operations o
         LEFT JOIN l.attempts a ON {}
         LEFT JOIN l.events e ON e.id =
             (SELECT MAX(event_id) FROM settle_events s WHERE s.op_id = o.id)
         WHERE o.id > ?1 AND o.id <= ?2",
        last_attempt(k)?
    ))
}

/// How a copied operation `o` finds its last attempt `a`: through the
/// rowid of the primary key's last entry for it, one descent of the key
/// and one of the table; or, where `attempts` has no rowid (`WITHOUT ROWID`), by its
/// number, a second descent of the key.
fn last_attempt(k: &Connection) -> rusqlite::Result<&'static str> {
    let without_rowid: bool = k.query_row(
        "SELECT coalesce(max(wr), 0) FROM pragma_table_list
         WHERE schema = 'l' AND name = 'attempts'",
        [],
        |r| r.get(0),
    )?;
    Ok(if without_rowid {
        "a.op_id = o.id
             AND a.attempt = (SELECT MAX(attempt) FROM l.attempts m WHERE m.op_id = o.id)"
    } else {
        "a.rowid = (SELECT m.rowid FROM l.attempts m WHERE m.op_id = o.id
             ORDER BY m.attempt DESC LIMIT 1)"
    })
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

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use rusqlite::types::Value;

    use super::super::catch_up::refresh;
    use super::super::ddl::TABLES;
    use super::{copy_operations, copy_sql};

    /// A ledger with what a copy can stumble on: an operation without
    /// attempts or events, a gap in the ids, attempts and events of an
    /// operation the ledger does not have, errors that repeat, an error
    /// and a lease stored as integers, attempt numbers past 9 written
    /// before a lower one, and a newest event whose row is gone; its
    /// attempts table `WITHOUT ROWID` when `attempts_options` says so.
    fn keeper(attempts_options: &str) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger.db");
        Connection::open(&ledger)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE operations (id INTEGER PRIMARY KEY, state TEXT, account TEXT,
                     op_type TEXT, idem_key TEXT, result_id TEXT, lease_expires_at,
                     created_at TEXT, updated_at TEXT, version INTEGER);
                 CREATE TABLE attempts (op_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
                     started_at TEXT, error, PRIMARY KEY (op_id, attempt)) {attempts_options};
                 CREATE TABLE events (id INTEGER PRIMARY KEY, op_id INTEGER, event TEXT);
                 INSERT INTO operations VALUES
                     (1, 'reserved', 'a', 't', 'k1', NULL, NULL, 'c', 'u', 0),
                     (2, 'unknown', 'a', 't', 'k2', NULL, '2026-01-01T00:00:00Z', 'c', 'u', 3),
                     (3, 'exhausted', 'b', 't', 'k3', NULL, 1767225600, 'c', 'u', 1),
                     (5, 'completed', 'b', 'u', 'k5', 'r5', NULL, 'c', 'u', 2),
                     (6, 'unknown', 'c', 'u', 'k6', NULL, NULL, 'c', 'u', 1);
                 INSERT INTO attempts VALUES
                     (2, 1, 's21', 'timeout'), (2, 2, 's22', NULL), (2, 3, 's23', 'boom'),
                     (3, 1, 's31', 42),
                     (4, 1, 's41', 'orphan'),
                     (5, 1, 's51', 'timeout'),
                     (6, 10, 's610', 'late'), (6, 2, 's62', 'timeout');
                 INSERT INTO events VALUES
                     (1, 2, 'reserved'), (2, 2, 'timeout'), (3, 3, 'reserved'),
                     (4, 4, 'orphan'), (5, 5, 'reserved'), (6, 5, 'committed'),
                     (7, 6, 'reserved'), (8, 6, 'gone'), (9, 9, 'orphan'), (10, 2, 'retried');",
            ))
            .unwrap();
        let k = Connection::open_in_memory().unwrap();
        k.execute("ATTACH ?1 AS l", [ledger.to_str().unwrap()])
            .unwrap();
        k.execute_batch(TABLES).unwrap();
        k.execute_batch(
            "INSERT INTO settle_events (op_id, event_id) SELECT op_id, id FROM l.events;
             DELETE FROM l.events WHERE id = 8;",
        )
        .unwrap();
        (dir, k)
    }

    fn snapshot(k: &Connection) -> (Vec<Vec<Value>>, Vec<(Value, i64)>) {
        let ops = k
            .prepare("SELECT * FROM settle_ops ORDER BY id")
            .unwrap()
            .query_map([], |r| {
                (0..16)
                    .map(|i| r.get::<_, Value>(i))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let errors = k
            .prepare(
                "SELECT t.value, e.op_id FROM settle_error_ops e
                 JOIN settle_texts t ON t.id = e.text_id ORDER BY 2, 1",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (ops, errors)
    }

    /// The build's copy, in two chunks that split the ledger where an
    /// operation is missing, gives every operation the row and the error
    /// mappings the catch-up computes for it alone.
    #[test]
    fn the_copy_is_what_the_catch_up_computes_row_by_row() {
        for attempts_options in ["", "WITHOUT ROWID"] {
            copy_matches_the_catch_up(attempts_options);
        }
    }

    fn copy_matches_the_catch_up(attempts_options: &str) {
        let (_dir, k) = keeper(attempts_options);
        let copy = copy_sql(&k).unwrap();
        copy_operations(&k, &copy, 0, 3).unwrap();
        copy_operations(&k, &copy, 3, 9).unwrap();
        let copied = snapshot(&k);
        assert_eq!(copied.0.len(), 5, "{:?}", copied.0);
        for op in 1..=9 {
            refresh(&k, op).unwrap();
        }
        assert_eq!(copied, snapshot(&k));
        // And what the merge wrote, spelled out for two of them.
        let row = |id: i64| {
            copied
                .0
                .iter()
                .find(|r| r[0] == Value::Integer(id))
                .unwrap()
                .clone()
        };
        let two = row(2);
        assert_eq!(
            two[10..].to_vec(),
            vec![
                Value::Integer(3),
                Value::Text("boom".into()),
                Value::Integer(3),
                Value::Text("s23".into()),
                Value::Text("retried".into()),
                Value::Integer(10),
            ]
        );
        let six = row(6);
        assert_eq!(
            six[11..13].to_vec(),
            vec![Value::Text("late".into()), Value::Integer(10)]
        );
        assert_eq!(
            six[14..].to_vec(),
            vec![Value::Null, Value::Null],
            "its newest event is gone"
        );
        assert!(copied.1.contains(&(Value::Integer(42), 3)));
        assert_eq!(
            row(3)[6],
            Value::Integer(1_767_225_600),
            "the lease keeps its type"
        );
    }
}
