//! The audit trail's guards (issue 9, point 2): triggers that refuse any
//! UPDATE or DELETE of `decisions` and let `retry_requests` change only by a
//! forward status move, and the hash chain over `decisions` that shows an
//! edit made with those triggers dropped. Computing a link, filling the chain
//! on migration, walking it for `settle audit --verify`. The encoding is
//! public (docs/ledger-v1.md) so an auditor can verify without settle; it
//! must never change for rows already written.

use std::fmt::Write as _;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::Sqlite;
use super::schema::sqlite;
use crate::domain::DecisionId;
use crate::error::{Error, Result};

/// The "previous hash" of the first decision.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The decision columns a link covers, in encoding order: ledger-v1's
/// columns, then settle's `extra_attempt`.
pub(super) const CHAIN_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, \
     evidence, note, operator, decided_at, op_version, undoes, extra_attempt";

/// One cell of a decision as SQLite stores it: the encoding follows the
/// storage class, so a value rewritten with another type breaks the link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Null,
    Int(i64),
    Text(&'a [u8]),
    /// Never written by settle; encoded so that such a row cannot verify.
    Real(f64),
    /// Never written by settle; as for `Real`.
    Blob(&'a [u8]),
}

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

impl<'a> From<Option<&'a str>> for Cell<'a> {
    fn from(v: Option<&'a str>) -> Self {
        v.map_or(Cell::Null, |s| Cell::Text(s.as_bytes()))
    }
}

/// A decision's chain hash: lowercase hex SHA-256 of the previous
/// decision's chain hash (64 hex characters, [`GENESIS`] for the first)
/// followed by each cell: `n;` for NULL, `i<decimal>;` for an integer,
/// `t<byte length>:<bytes>;` for text, `b<byte length>:<bytes>;` for a blob,
/// `r<16 hex digits of the IEEE-754 bits>;` for a real.
pub fn link(prev: &str, cells: &[Cell]) -> String {
    let mut message = prev.as_bytes().to_vec();
    for cell in cells {
        match cell {
            Cell::Null => message.extend_from_slice(b"n;"),
            Cell::Int(i) => message.extend_from_slice(format!("i{i};").as_bytes()),
            Cell::Real(f) => {
                message.extend_from_slice(format!("r{:016x};", f.to_bits()).as_bytes());
            }
            Cell::Text(bytes) => sized(&mut message, 't', bytes),
            Cell::Blob(bytes) => sized(&mut message, 'b', bytes),
        }
    }
    Sha256::digest(&message)
        .iter()
        .fold(String::with_capacity(64), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// `<tag><byte length>:<bytes>;`
fn sized(message: &mut Vec<u8>, tag: char, bytes: &[u8]) {
    message.extend_from_slice(format!("{tag}{}:", bytes.len()).as_bytes());
    message.extend_from_slice(bytes);
    message.push(b';');
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

/// What walking the chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainVerdict {
    /// Every decision links to the one before it; `head` is the newest
    /// decision and its hash (keep them elsewhere to detect a cut-off
    /// tail).
    Intact {
        decisions: u64,
        head: Option<(DecisionId, String)>,
    },
    /// The first decision whose link does not hold, and why.
    Broken { at: DecisionId, problem: String },
}

/// One decision as the walk reads it.
struct Walked {
    id: i64,
    cells: Vec<OwnedCell>,
    /// The chain hash the row stores (NULL or not text: none).
    stored: Option<String>,
}

impl Walked {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Walked> {
        let cells: Vec<OwnedCell> = (0..13)
            .map(|i| row.get_ref(i).map(OwnedCell::from))
            .collect::<rusqlite::Result<_>>()?;
        Ok(Walked {
            id: row.get_ref(0)?.as_i64().unwrap_or_default(),
            cells,
            stored: row.get_ref(13)?.as_str().ok().map(str::to_string),
        })
    }

    /// The hash this row's columns give after `prev`.
    fn hash_after(&self, prev: &str) -> String {
        let cells: Vec<Cell> = self.cells.iter().map(OwnedCell::as_cell).collect();
        link(prev, &cells)
    }

    fn links_to(&self, prev: &str) -> bool {
        self.stored.as_deref() == Some(self.hash_after(prev).as_str())
    }
}

impl Sqlite {
    /// Walks the decisions in id order and recomputes every link. Reads
    /// only; a ledger without the `chain_hash` column (older than schema 3)
    /// is an error saying how to add it.
    pub fn verify_chain(&self) -> Result<ChainVerdict> {
        let err = |e| sqlite(&self.path, "reading the audit trail", e);
        if !self.console_tables {
            // Never adopted: no decisions table, so no decision to chain.
            return Ok(ChainVerdict::Intact {
                decisions: 0,
                head: None,
            });
        }
        let chained: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info('decisions') WHERE name = 'chain_hash'",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        if !chained {
            return Err(Error::ledger(
                &self.path,
                "the audit trail has no hash chain yet (schema older than 3)",
                "run `settle adopt LEDGER` once to add it (reading commands never write), then verify",
            ));
        }
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {CHAIN_COLUMNS}, chain_hash FROM decisions ORDER BY id"
            ))
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut before: Option<Walked> = None;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(err)? {
            let current = Walked::read(row).map_err(err)?;
            // As [`head`]: after a row without a hash the chain restarts.
            let prev_hash = before
                .as_ref()
                .and_then(|b| b.stored.clone())
                .unwrap_or_else(|| GENESIS.to_string());
            if !current.links_to(&prev_hash) {
                // Whether the next decision still links to this row's
                // stored hash tells an edited row from a rewritten link.
                let successor = match rows.next().map_err(err)? {
                    Some(next) => {
                        let next = Walked::read(next).map_err(err)?;
                        Some(current.stored.as_deref().is_some_and(|s| next.links_to(s)))
                    }
                    None => None,
                };
                return Ok(broken(before.as_ref(), &current, &prev_hash, successor));
            }
            n += 1;
            before = Some(current);
        }
        Ok(ChainVerdict::Intact {
            decisions: n,
            head: before.and_then(|b| Some((DecisionId(b.id), b.stored?))),
        })
    }
}

/// Why the link of `row` does not hold. `successor` says whether the next
/// decision still links to this row's stored hash (None: it is the last).
fn broken(
    before: Option<&Walked>,
    row: &Walked,
    prev_hash: &str,
    successor: Option<bool>,
) -> ChainVerdict {
    let at = DecisionId(row.id);
    let Some(stored) = &row.stored else {
        return ChainVerdict::Broken {
            at,
            problem:
                "it has no chain hash: it was not recorded by settle (inserted with plain SQL?)"
                    .to_string(),
        };
    };
    let hashes = format!(
        "recomputed {}…, stored {}…",
        &row.hash_after(prev_hash)[..12],
        stored.chars().take(12).collect::<String>()
    );
    let first_missing = before.map_or(1, |b| b.id + 1);
    let problem = if row.id > first_missing {
        let after = before.map_or("the start of the trail".to_string(), |b| {
            format!("decision {}", b.id)
        });
        let missing = if row.id - 1 == first_missing {
            format!("decision {first_missing} is")
        } else {
            format!("decisions {first_missing} to {} are", row.id - 1)
        };
        format!("it does not link to {after}: {missing} missing (deleted) ({hashes})")
    } else if successor == Some(true) {
        // The next link still holds, so this row's stored hash is the one
        // settle wrote: its columns changed, or the row before it was
        // rewritten along with a recomputed hash.
        format!(
            "its columns were changed after it was recorded, or the decision before it was rewritten with a recomputed hash ({hashes})"
        )
    } else {
        format!("its columns or its chain hash were changed after it was recorded ({hashes})")
    };
    ChainVerdict::Broken { at, problem }
}

/// A cell read out of a row, kept past the row's lifetime.
#[derive(Debug, Clone, PartialEq)]
enum OwnedCell {
    Null,
    Int(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
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

impl OwnedCell {
    fn as_cell(&self) -> Cell<'_> {
        match self {
            OwnedCell::Null => Cell::Null,
            OwnedCell::Int(i) => Cell::Int(*i),
            OwnedCell::Real(f) => Cell::Real(*f),
            OwnedCell::Text(t) => Cell::Text(t),
            OwnedCell::Blob(b) => Cell::Blob(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding is a public contract: this vector was computed with
    /// Python's hashlib from docs/ledger-v1.md, not with this code.
    #[test]
    fn a_link_is_the_documented_encoding() {
        let cells = [
            Cell::Int(1),
            Cell::Text(b"applied"),
            Cell::Null,
            Cell::Int(-3),
            Cell::Text("é".as_bytes()),
        ];
        assert_eq!(
            link(GENESIS, &cells),
            "f5273a005c19467ef5ee62f93139c703dbb4247d4c8bd909cc214227c63d2bff"
        );
        // Type matters: the integer 1 and the text "1" give different links.
        assert_ne!(
            link(GENESIS, &[Cell::Int(1)]),
            link(GENESIS, &[Cell::Text(b"1")])
        );
    }
}
