//! Keeping the trigram index of what `err:` and free text read: each
//! distinct value once in `settle_texts` (its trigger feeds the FTS5
//! index), and which operations' attempts have each error. Run by the
//! build on each chunk of copied operations and by the catch-up on each
//! operation it computes again, both on the keeper's connection (the
//! ledger attached read-only as `l`).

use rusqlite::{Connection, params};

/// Indexes the operations with ids in `(from, to]`, whose rows are already
/// in `settle_ops`: their accounts, op types, keys, result ids and their
/// attempts' errors become values of the index, and each error is mapped
/// to its operation. The caller dropped the mappings of an operation it
/// computes again.
pub(super) fn index_ops(tx: &Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO settle_texts (value)
         SELECT account FROM settle_ops WHERE id > ?1 AND id <= ?2 AND account IS NOT NULL
         UNION SELECT op_type FROM settle_ops WHERE id > ?1 AND id <= ?2 AND op_type IS NOT NULL
         UNION SELECT idem_key FROM settle_ops WHERE id > ?1 AND id <= ?2 AND idem_key IS NOT NULL
         UNION SELECT result_id FROM settle_ops
             WHERE id > ?1 AND id <= ?2 AND result_id IS NOT NULL
         UNION SELECT error FROM l.attempts
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
