//! Several ledgers read as one (one incident, many services): which
//! ledger a row is from, and how each ledger of the group stands. Pure
//! data; the store's group fills it in, the console shows it.

use std::fmt;
use std::sync::Arc;

use super::OperationId;

/// The ledger of a group a row is from, and the row's id in that ledger
/// (the row's own [`OperationId`] is the group's, unique across it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The ledger's name in the group (its `@NAME`, or its short name).
    pub ledger: Arc<str>,
    /// The operation's id in its own ledger.
    pub id: OperationId,
}

impl fmt::Display for Origin {
    /// `NAME:ID`, the form every command takes for an operation of a group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ledger, self.id)
    }
}

/// How one ledger of a group stands, as its last read left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberState {
    pub name: String,
    /// Why its rows are missing from what is shown (it could not be opened
    /// or read), in a few words; None while it answers.
    pub down: Option<String>,
    /// Its own rows take no decision (opened or named read-only, or no
    /// primary reachable).
    pub read_only: bool,
    /// How far its read model is behind, while it catches up.
    pub catching_up: Option<super::CatchUp>,
}
