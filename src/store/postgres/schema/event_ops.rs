//! Each operation's events, found through settle's own table
//! `settle_event_ops (op_id, id)` instead of an index on the service's
//! `events`: an index there is written by every event the service
//! inserts, inside its transaction, and it was the last thing settle
//! added to the service's write path.
//!
//! The table holds every event at or below the queue's event mark
//! (`settle_queue_mark.event_mark`, [`super::queue`]), whose xmin-safe
//! catch-up records the events it passes here in the same transaction;
//! a read takes the ids the table holds for the operation and the few
//! events above the mark, a short range of the service's primary key
//! while the catch-up keeps up. `event_map` on the marks' row is how far
//! adoption's fill has come: the table is whole, and reads use it, once
//! the fill reaches the event mark.

use postgres::{Client, GenericClient};

/// How a read finds an operation's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Events {
    /// No way but a scan of `events` (a look before adoption): list rows
    /// show no last event.
    None,
    /// An index leads with `events.op_id` (the service's own, or schema
    /// 3's until the upgrade's fill ends).
    Index,
    /// settle's own table, this file's.
    Map,
}

/// The table, and the fill's progress beside the marks (0 on a new row:
/// the catch-up keeps a table that starts whole, on an empty ledger,
/// whole), and where the fill ends: the event mark the marks' row began
/// with ([`super::queue::first_mark`]), above which the catch-up records
/// every event. NULL on a row older than the column, whose catch-up may
/// have recorded events below the mark the fill ends at.
pub(crate) const EVENT_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS settle_event_ops (
    op_id bigint NOT NULL,
    id    bigint NOT NULL,
    PRIMARY KEY (op_id, id)
);
ALTER TABLE settle_queue_mark ADD COLUMN IF NOT EXISTS event_map bigint NOT NULL DEFAULT 0;
ALTER TABLE settle_queue_mark ADD COLUMN IF NOT EXISTS fill_end bigint;
"#;

/// Events per transaction of the fill: short enough that none holds back
/// the server's vacuum for long.
const BATCH: i64 = 200_000;

/// The mark that splits the table's ids from the service's newest events,
/// as statements name it: [`crate::store::postgres::conn::Pg::pinned`] puts its value in its
/// place before they run.
pub(crate) const MARK: &str = "(SELECT event_mark FROM settle_queue_mark)";

/// Whether the table is there and whole: a read on a ledger without it
/// (a look before adoption, or before the upgrade's fill ends) uses an
/// index on `events.op_id` where there is one.
pub(crate) const IS_WHOLE: &str = "SELECT to_regclass('settle_event_ops') IS NOT NULL
     AND coalesce((SELECT event_map >= event_mark FROM settle_queue_mark LIMIT 1), false)";

/// The condition on `events` that selects the events of the operation at
/// placeholder `key`: the table's ids and those above the mark, as one
/// array the primary key is searched for.
pub(crate) fn events_of(key: &str) -> String {
    format!(
        "id = ANY (ARRAY(SELECT m.id FROM settle_event_ops m WHERE m.op_id = {key}::bigint
           UNION ALL SELECT t.id FROM events t
             WHERE t.id > {MARK} AND t.op_id = {key}::bigint))
         AND op_id = {key}::bigint"
    )
}

/// Records the events above `from` up to and including `to`, in the
/// table's order: its primary key is then written page after page.
pub(crate) fn record(
    db: &mut impl GenericClient,
    from: i64,
    to: i64,
) -> Result<u64, postgres::Error> {
    db.execute(
        &format!("{RANGE} {IN_KEY_ORDER} ON CONFLICT DO NOTHING"),
        &[&from, &to],
    )
}

/// Records every event up to and including `to` into the table while it
/// has no key (a copy's new ledger, whose keys are built after its rows):
/// no order to keep and nothing there to meet, so neither is asked for.
pub(crate) fn record_unkeyed(db: &mut impl GenericClient, to: i64) -> Result<u64, postgres::Error> {
    db.execute(RANGE, &[&i64::MIN, &to])
}

/// The events above `$1` up to and including `$2`, as rows of the table.
const RANGE: &str = "INSERT INTO settle_event_ops (op_id, id)
     SELECT op_id, id FROM events WHERE id > $1 AND id <= $2 AND op_id IS NOT NULL";

/// In the key's order: its pages are then written one after another.
const IN_KEY_ORDER: &str = "ORDER BY op_id, id";

/// Adoption's fill: the events up to `fill_end`, [`BATCH`] ids per
/// transaction, each moving `event_map` on; the catch-up records those
/// above it as it moves the mark, so the fill then moves `event_map` to
/// the mark and ends. A row without `fill_end` fills up to the mark,
/// passing over what the catch-up recorded.
pub(crate) fn fill(
    client: &mut Client,
    progress: &mut dyn FnMut(&str),
) -> Result<(), postgres::Error> {
    // Pages handed to the kernel as they are written leave each checkpoint
    // less to sync, which would otherwise hold a service's commits
    // (docs/benchmarks.md, *Behind the code*).
    client.batch_execute("SET backend_flush_after = '1MB'")?;
    loop {
        let mut tx = client.transaction()?;
        // The marks' row lock orders the fill with a catch-up round.
        let row = tx.query_one(
            "SELECT event_map, event_mark, fill_end FROM settle_queue_mark FOR UPDATE",
            &[],
        )?;
        let (from, mark, end): (i64, i64, Option<i64>) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        if from >= mark {
            return tx.commit();
        }
        if end.is_some_and(|end| from >= end) {
            tx.execute("UPDATE settle_queue_mark SET event_map = event_mark", &[])?;
            return tx.commit();
        }
        let last = end.unwrap_or(mark);
        progress(&format!(
            "recording each operation's events ({from} of {last} ids)"
        ));
        let to = (from + BATCH).min(last);
        if end.is_some() {
            // No row of the range is there yet: a plain insert writes less
            // WAL than one that looks for each first, so fewer checkpoints
            // hold a service's commits.
            tx.execute(&format!("{RANGE} {IN_KEY_ORDER}"), &[&from, &to])?;
        } else {
            record(&mut tx, from, to)?;
        }
        tx.execute("UPDATE settle_queue_mark SET event_map = $1", &[&to])?;
        tx.commit()?;
    }
}

/// The statement that moves the fill's progress with the event mark when
/// the table was whole at the old mark `$1`, the new mark being `$2`.
pub(crate) const KEEP_WHOLE: &str =
    "UPDATE settle_queue_mark SET event_map = $2 WHERE event_map >= $1 AND event_map < $2";
