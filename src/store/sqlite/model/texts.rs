//! Keeping the trigram index of what `err:` reads: each distinct error
//! once in `settle_texts` (its trigger feeds the FTS5 index), and which
//! operations' attempts have each. Run by the
//! build on each chunk of copied operations and by the catch-up on each
//! operation it computes again, both on the keeper's connection (the
//! ledger attached read-only as `l`).

use rusqlite::{Connection, params};

/// Indexes the attempts' errors of the operations with ids in
/// `(from, to]`: each distinct error becomes a value of the index, mapped
/// to its operations. Only errors: they repeat, so the index stays small.
/// Keys and result ids, one per operation, made the index as big as the
/// rest of the read model and doubled its build, so free text reads row
/// by row. The caller dropped the
/// mappings of an operation it computes again.
pub(super) fn index_ops(tx: &Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO settle_texts (value)
         SELECT DISTINCT error FROM l.attempts
             WHERE op_id > ?1 AND op_id <= ?2 AND error IS NOT NULL",
    )?
    .execute(params![from, to])?;
    // `+` drops the column's affinity, so the comparison is the value as
    // stored and the unique index on `value` finds it.
    tx.prepare_cached(
        "INSERT OR IGNORE INTO settle_error_ops (text_id, op_id)
         SELECT t.id, a.op_id FROM l.attempts a JOIN settle_texts t ON t.value = +a.error
         WHERE a.op_id > ?1 AND a.op_id <= ?2 AND a.error IS NOT NULL",
    )?
    .execute(params![from, to])?;
    Ok(())
}

/// Forgets which errors operation `op` had, before it is indexed again.
pub(super) fn forget_op(tx: &Connection, op: i64) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM settle_error_ops WHERE op_id = ?1")?
        .execute([op])?;
    Ok(())
}
