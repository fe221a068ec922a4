//! Several ledgers read as one (one incident, many services): how a group
//! numbers its ledgers' rows, which ledger a row is from, and how each
//! ledger of the group stands. Pure data; the store's group fills it in,
//! the console shows it.

use std::fmt;
use std::sync::Arc;

use super::ids::OperationId;

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
    pub catching_up: Option<super::text_search::CatchUp>,
}

/// How a group numbers its ledgers' rows so one id names one row of the
/// whole incident: the row `x` of the `k`th of `n` ledgers is `x * n + k`.
/// Ids keep each ledger's own order, and a list sorted by them interleaves
/// the ledgers as each one's ids run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbering {
    n: i64,
}

impl Numbering {
    pub fn of(members: usize) -> Numbering {
        Numbering {
            n: i64::try_from(members.max(1)).unwrap_or(i64::MAX),
        }
    }

    pub fn members(self) -> i64 {
        self.n
    }

    /// The group's id of the row `local` of member `member`.
    pub fn global(self, member: usize, local: OperationId) -> OperationId {
        let k = i64::try_from(member).unwrap_or(0);
        OperationId(local.0.saturating_mul(self.n).saturating_add(k))
    }

    /// Which member a group's id names, and the id in that member.
    pub fn split(self, id: OperationId) -> (usize, OperationId) {
        let member = usize::try_from(id.0.rem_euclid(self.n)).unwrap_or(0);
        (member, OperationId(id.0.div_euclid(self.n)))
    }
}

/// How an id is said to the operator: `#ID` for one ledger, `#NAME:ID`
/// (its own ledger's id) in a group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdLabels {
    names: Vec<String>,
}

impl IdLabels {
    /// The labels of a group of these ledgers, in the group's order.
    pub fn of(members: &[MemberState]) -> IdLabels {
        IdLabels {
            names: members.iter().map(|m| m.name.clone()).collect(),
        }
    }

    /// `#42`, or `#pay:14` in a group.
    pub fn label(&self, id: OperationId) -> String {
        if self.names.len() < 2 {
            return format!("#{id}");
        }
        let (member, local) = Numbering::of(self.names.len()).split(id);
        match self.names.get(member) {
            Some(name) => format!("#{name}:{local}"),
            None => format!("#{id}"),
        }
    }
}
