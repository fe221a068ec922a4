//! The audit trail's guards in SQLite, so a decision once written stays as
//! written: triggers that
//! refuse any UPDATE or DELETE of `decisions` and let `retry_requests` change
//! only by a forward status move, and the hash chain over `decisions` that
//! shows an edit made with those triggers dropped: filling the chain on
//! migration, reading it for `settle audit --verify`. The encoding and the
//! walk are backend-neutral and live in [`crate::store::chain`].

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use super::conn::Sqlite;
use super::error::sqlite;
use crate::error::{Error, Result};
use crate::store::chain::{CHAIN_COLUMNS, ChainVerdict, GENESIS, OwnedCell, Walked, walk};
pub(super) use crate::store::chain::{Cell, link};

impl<'a> From<ValueRef<'a>> for Cell<'a> {
    fn from(v: ValueRef<'a>) -> Self {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Int(i),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(t) => Cell::Text(t),
            ValueRef::Blob(b) => Cell::Blob(b),
        }
    }
}

/// The chain hash of the newest decision, where the next one links on.
pub(super) fn head(conn: &Connection) -> rusqlite::Result<String> {
    let newest: Option<Option<String>> = conn
        .query_row(
            "SELECT chain_hash FROM decisions ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok(r.get_ref(0)?.as_str().ok().map(str::to_string)),
        )
        .optional()?;
    // A newest row without a readable hash (written with plain SQL) is
    // reported by `--verify`; the chain restarts from the genesis rather
    // than refuse every decision from now on.
    Ok(newest.flatten().unwrap_or_else(|| GENESIS.to_string()))
}

/// Triggers that keep the trail append-only, as (name, event, body). The
/// status moves a worker makes (ledger-v1: `queued` -> `claimed` -> `done`)
/// and the console's cancel (`queued` -> `cancelled`) are the only updates
/// `retry_requests` allows; columns outside the contract are not guarded.
pub(super) fn append_only_triggers() -> [(&'static str, &'static str, &'static str); 7] {
    [
        (
            "settle_decisions_no_update",
            "BEFORE UPDATE ON decisions",
            "SELECT RAISE(ABORT, 'decisions are append-only: a decision is corrected by a later decision (settle decide --reopen), never edited');",
        ),
        (
            "settle_decisions_no_delete",
            "BEFORE DELETE ON decisions",
            "SELECT RAISE(ABORT, 'decisions are append-only: nothing is ever deleted from the audit trail');",
        ),
        (
            "settle_retry_requests_no_delete",
            "BEFORE DELETE ON retry_requests",
            "SELECT RAISE(ABORT, 'retry_requests are append-only: cancel a queued request with settle decide --cancel-retry');",
        ),
        (
            "settle_retry_requests_fixed",
            "BEFORE UPDATE ON retry_requests WHEN NEW.id IS NOT OLD.id
                OR NEW.op_id IS NOT OLD.op_id OR NEW.idem_key IS NOT OLD.idem_key
                OR NEW.requested_at IS NOT OLD.requested_at
                OR NEW.requested_by IS NOT OLD.requested_by
                OR NEW.decision_id IS NOT OLD.decision_id",
            "SELECT RAISE(ABORT, 'retry_requests are append-only: only status may change');",
        ),
        (
            "settle_retry_requests_forward",
            "BEFORE UPDATE OF status ON retry_requests WHEN NEW.status IS NOT OLD.status
                AND NOT ((OLD.status = 'queued' AND NEW.status IN ('claimed', 'done', 'failed', 'cancelled'))
                      OR (OLD.status = 'claimed' AND NEW.status IN ('done', 'failed')))",
            "SELECT RAISE(ABORT, 'retry_requests status only moves forward: queued -> claimed -> done or failed, or queued -> cancelled');",
        ),
        (
            "settle_probes_no_update",
            "BEFORE UPDATE ON settle_probes",
            "SELECT RAISE(ABORT, 'probes are append-only: a receiver asked again is a new probe');",
        ),
        (
            "settle_probes_no_delete",
            "BEFORE DELETE ON settle_probes",
            "SELECT RAISE(ABORT, 'probes are append-only: nothing is ever deleted from the evidence');",
        ),
    ]
}

/// Computes the chain over the decisions already in a ledger that had none
/// (a migration from schema 2 or older), in id order. Runs inside the
/// migration's transaction, before the append-only triggers exist.
pub(super) fn fill(conn: &Connection, path: &Path) -> Result<usize> {
    let err = |e| sqlite(path, "chaining the existing decisions", e);
    let mut links = Vec::new();
    {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {CHAIN_COLUMNS} FROM decisions ORDER BY id"
            ))
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut prev = GENESIS.to_string();
        while let Some(row) = rows.next().map_err(err)? {
            let cells = cells(row).map_err(err)?;
            let hash = link(&prev, &cells);
            links.push((row.get::<_, i64>(0).map_err(err)?, hash.clone()));
            prev = hash;
        }
    }
    let mut update = conn
        .prepare("UPDATE decisions SET chain_hash = ?1 WHERE id = ?2")
        .map_err(err)?;
    for (id, hash) in &links {
        update.execute(rusqlite::params![hash, id]).map_err(err)?;
    }
    Ok(links.len())
}

fn cells<'r>(row: &'r rusqlite::Row<'_>) -> rusqlite::Result<Vec<Cell<'r>>> {
    (0..13).map(|i| row.get_ref(i).map(Cell::from)).collect()
}

/// [`crate::store::backend::History::verify_chain`] on SQLite: a ledger
/// without the `chain_hash` column (older than schema 3) is an error saying
/// how to add it.
pub(super) fn verify(db: &Sqlite) -> Result<ChainVerdict> {
    let err = |e| sqlite(&db.path, "reading the audit trail", e);
    if !db.tables.console {
        // Never adopted: no decisions table, so no decision to chain.
        return Ok(ChainVerdict::Intact {
            decisions: 0,
            head: None,
        });
    }
    let chained: bool = db
        .conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('decisions') WHERE name = 'chain_hash'",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if !chained {
        return Err(Error::ledger(
            &db.path,
            "the audit trail has no hash chain yet (schema older than 3)",
            "run `settle adopt LEDGER` once to add it (reading commands never write), then verify",
        ));
    }
    let mut stmt = db
        .conn
        .prepare(&format!(
            "SELECT {CHAIN_COLUMNS}, chain_hash FROM decisions ORDER BY id"
        ))
        .map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    walk(|| match rows.next() {
        Ok(Some(row)) => walked(row).map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    })
    .map_err(err)
}

/// One decision as the walk reads it, each cell as SQLite stores it.
fn walked(row: &rusqlite::Row<'_>) -> rusqlite::Result<Walked> {
    let cells: Vec<OwnedCell> = (0..13)
        .map(|i| row.get_ref(i).map(OwnedCell::from))
        .collect::<rusqlite::Result<_>>()?;
    Ok(Walked {
        id: row.get_ref(0)?.as_i64().unwrap_or_default(),
        cells,
        stored: row.get_ref(13)?.as_str().ok().map(str::to_string),
    })
}

impl From<ValueRef<'_>> for OwnedCell {
    fn from(v: ValueRef<'_>) -> Self {
        match v {
            ValueRef::Null => OwnedCell::Null,
            ValueRef::Integer(i) => OwnedCell::Int(i),
            ValueRef::Real(f) => OwnedCell::Real(f),
            ValueRef::Text(t) => OwnedCell::Text(t.to_vec()),
            ValueRef::Blob(b) => OwnedCell::Blob(b.to_vec()),
        }
    }
}
