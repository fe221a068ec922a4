//! The audit trail's hash chain, whichever database holds it, so an edit
//! made behind settle's back shows: the encoding of one link, and the walk that recomputes every
//! link and says where the chain breaks. Each backend reads its rows into
//! [`Walked`] and stores nothing here. The encoding is public
//! (docs/ledger-v1.md) so an auditor can verify without settle; it must never
//! change for rows already written, and it must give the same hash for a
//! decision on SQLite and on PostgreSQL so `settle copy` keeps a chain intact.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::domain::DecisionId;

/// The decision columns a link covers, in encoding order: ledger-v1's
/// columns, then settle's `extra_attempt`.
pub const CHAIN_COLUMNS: &str = "id, op_id, decision, from_state, to_state, result_id, \
     evidence, note, operator, decided_at, op_version, undoes, extra_attempt";

/// The "previous hash" of the first decision.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One cell of a decision as SQLite stores it: the encoding follows the
/// storage class, so a value rewritten with another type breaks the link.
/// PostgreSQL's typed columns are said in the same cells (a `timestamptz`
/// as settle's time text, a boolean as 0 or 1), so one chain verifies on
/// both backends.
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
pub(crate) struct Walked {
    pub(crate) id: i64,
    pub(crate) cells: Vec<OwnedCell>,
    /// The chain hash the row stores (NULL or not text: none).
    pub(crate) stored: Option<String>,
}

impl Walked {
    /// The hash this row's columns give after `prev`.
    fn hash_after(&self, prev: &str) -> String {
        let cells: Vec<Cell> = self.cells.iter().map(OwnedCell::as_cell).collect();
        link(prev, &cells)
    }

    fn links_to(&self, prev: &str) -> bool {
        self.stored.as_deref() == Some(self.hash_after(prev).as_str())
    }
}

/// Walks decisions given in id order by `next` and recomputes every link:
/// the backends' `verify_chain` share it so a break reads the same on both.
pub(crate) fn walk<E>(
    mut next: impl FnMut() -> Result<Option<Walked>, E>,
) -> Result<ChainVerdict, E> {
    let mut before: Option<Walked> = None;
    let mut n = 0u64;
    while let Some(current) = next()? {
        // As the backends' `head`: after a row without a hash the chain
        // restarts.
        let prev_hash = before
            .as_ref()
            .and_then(|b| b.stored.clone())
            .unwrap_or_else(|| GENESIS.to_string());
        if !current.links_to(&prev_hash) {
            // Whether the next decision still links to this row's stored
            // hash tells an edited row from a rewritten link.
            let successor =
                next()?.map(|next| current.stored.as_deref().is_some_and(|s| next.links_to(s)));
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
pub(crate) enum OwnedCell {
    Null,
    Int(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
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
