//! Keeping the read model current from what the service committed, never
//! inside the service's transaction: from the watermarks, the operations,
//! events, attempts and decisions written since, each touched operation's
//! row computed again from the ledger by primary key. Each batch is one
//! short transaction on the read model's file; the ledger (attached
//! read-only as `l`) is only read. The sweep finds what no new row tells:
//! an operation a service changed or deleted without an event, attempt or
//! decision.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::ddl::{COPIED, COPIED_O};
use super::texts;
use crate::store::sqlite::reads::filter::same_as_ledger;

/// New rows of each kind read per batch.
const BATCH: i64 = 5_000;

/// Operations the sweep compares per batch: a few milliseconds, so the
/// slice a read pays for stays small.
pub(super) const SWEEP: i64 = 1_000;

/// Takes the next batch of what the service wrote since the watermarks
/// into the read model; true when there may be more.
pub(super) fn batch(k: &Connection) -> rusqlite::Result<bool> {
    let tx = k.unchecked_transaction()?;
    // The read model's write lock first, so a second keeper waits here
    // (busy timeout) instead of failing on a stale snapshot later.
    tx.execute("UPDATE settle_marks SET complete = complete", [])?;
    let (ops, events, attempts, decisions) = tx.query_row(
        "SELECT ops, events, attempts, decisions FROM settle_marks",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let mut touched = BTreeSet::new();
    let mut more = false;
    let new_ops = pairs(&tx, "SELECT id, id FROM l.operations WHERE id > ?1", ops)?;
    let new_events = pairs(&tx, "SELECT id, op_id FROM l.events WHERE id > ?1", events)?;
    let new_attempts = pairs(
        &tx,
        "SELECT rowid, op_id FROM l.attempts WHERE rowid > ?1",
        attempts,
    )?;
    let new_decisions = pairs(
        &tx,
        "SELECT id, op_id FROM l.decisions WHERE id > ?1",
        decisions,
    )?;
    let mut marks = [ops, events, attempts, decisions];
    for (i, rows) in [&new_ops, &new_events, &new_attempts, &new_decisions]
        .into_iter()
        .enumerate()
    {
        more |= rows.len() as i64 >= BATCH;
        if let Some((last, _)) = rows.last() {
            marks[i] = *last;
        }
        touched.extend(rows.iter().filter_map(|(_, op)| *op));
    }
    {
        let mut index = tx.prepare_cached(
            "INSERT OR IGNORE INTO settle_events (op_id, event_id) VALUES (?1, ?2)",
        )?;
        for (id, op) in &new_events {
            if let Some(op) = op {
                index.execute(params![op, id])?;
            }
        }
    }
    for op in touched {
        refresh(&tx, op)?;
    }
    tx.execute(
        "UPDATE settle_marks SET ops = ?1, events = ?2, attempts = ?3, decisions = ?4",
        params![marks[0], marks[1], marks[2], marks[3]],
    )?;
    tx.commit()?;
    Ok(more)
}

/// Rows the service wrote that the watermarks have not reached, of every
/// kind the catch-up reads: each a step down a primary key.
pub(super) fn remaining(k: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = k.query_row(
        "SELECT max(0, (SELECT coalesce(max(id), 0) FROM l.operations) - ops)
             + max(0, (SELECT coalesce(max(id), 0) FROM l.events) - events)
             + max(0, (SELECT coalesce(max(rowid), 0) FROM l.attempts) - attempts)
             + max(0, (SELECT coalesce(max(id), 0) FROM l.decisions) - decisions)
         FROM settle_marks",
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Up to [`BATCH`] rows of `sql` (a row id and an operation id, in row id
/// order) after `after`.
fn pairs(tx: &Connection, sql: &str, after: i64) -> rusqlite::Result<Vec<(i64, Option<i64>)>> {
    let mut stmt = tx.prepare_cached(&format!("{sql} ORDER BY 1 LIMIT {BATCH}"))?;
    stmt.query_map([after], |r| Ok((r.get(0)?, r.get(1).ok())))?
        .collect()
}

/// Computes operation `op`'s row again from the ledger (or drops it when
/// the ledger no longer has it), keeping the state counts and the text
/// index.
pub(super) fn refresh(tx: &Connection, op: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE settle_state_counts SET n = n - 1
         WHERE state = (SELECT coalesce(state, '') FROM settle_ops WHERE id = ?1)",
    )?
    .execute([op])?;
    tx.prepare_cached("DELETE FROM settle_ops WHERE id = ?1")?
        .execute([op])?;
    texts::forget_op(tx, op)?;
    tx.prepare_cached(&format!(
        "INSERT INTO settle_ops (id, {COPIED}, attempts, last_error, last_attempt,
             last_attempt_at, last_event, last_event_id)
         SELECT o.id, {COPIED_O},
             (SELECT COUNT(*) FROM l.attempts a WHERE a.op_id = o.id),
             (SELECT a.error FROM l.attempts a WHERE a.op_id = o.id
                 ORDER BY a.attempt DESC LIMIT 1),
             (SELECT MAX(a.attempt) FROM l.attempts a WHERE a.op_id = o.id),
             (SELECT a.started_at FROM l.attempts a WHERE a.op_id = o.id
                 ORDER BY a.attempt DESC LIMIT 1),
             e.event, e.id
         FROM l.operations o LEFT JOIN l.events e ON e.id =
             (SELECT MAX(event_id) FROM settle_events WHERE op_id = o.id)
         WHERE o.id = ?1"
    ))?
    .execute([op])?;
    tx.prepare_cached(
        "INSERT INTO settle_state_counts (state, n)
         SELECT coalesce(state, ''), 1 FROM settle_ops WHERE id = ?1
         ON CONFLICT (state) DO UPDATE SET n = n + 1",
    )?
    .execute([op])?;
    texts::index_ops(tx, op - 1, op)
}

/// Compares the operations with ids in `(from, from + SWEEP]` with their
/// rows (every copied column, the attempt count and the last attempt's
/// number) and refreshes those that differ or are gone; the next `from`, or
/// None past the last operation.
pub(super) fn sweep(k: &Connection, from: i64) -> rusqlite::Result<Option<i64>> {
    let tx = k.unchecked_transaction()?;
    tx.execute("UPDATE settle_marks SET complete = complete", [])?;
    let to = from + SWEEP;
    let same = same_as_ledger("r", "o");
    let stale: Vec<i64> = tx
        .prepare_cached(&format!(
            "SELECT o.id FROM l.operations o LEFT JOIN settle_ops r ON r.id = o.id
             WHERE o.id > ?1 AND o.id <= ?2 AND (r.id IS NULL OR NOT ({same})
                 OR r.attempts <> (SELECT COUNT(*) FROM l.attempts a WHERE a.op_id = o.id)
                 OR r.last_attempt IS NOT
                     (SELECT MAX(a.attempt) FROM l.attempts a WHERE a.op_id = o.id))
             UNION
             SELECT r.id FROM settle_ops r WHERE r.id > ?1 AND r.id <= ?2
                 AND NOT EXISTS (SELECT 1 FROM l.operations o WHERE o.id = r.id)"
        ))?
        .query_map(params![from, to], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for op in stale {
        refresh(&tx, op)?;
    }
    let beyond: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM l.operations WHERE id > ?1 LIMIT 1",
            [to],
            |r| r.get(0),
        )
        .optional()?;
    tx.commit()?;
    Ok(beyond.map(|_| to))
}
