//! The row ids a list is read by, as newtypes so one cannot be mixed up
//! with another, and where a page of such a list starts.

use std::fmt;

/// Row id of an operation (`operations.id`). A newtype so it cannot be mixed
/// up with a decision id, an attempt number or a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId(pub i64);

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Row id of a decision (`decisions.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DecisionId(pub i64);

impl fmt::Display for DecisionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a page starts, for any list ordered newest first by row id
/// (operations by [`OperationId`], the audit trail by [`DecisionId`]; the
/// console's window asks with plain `i64` and maps it with [`Seek::map`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek<Id = OperationId> {
    /// The newest rows.
    First,
    /// The rows that follow (are older than) this id.
    After(Id),
    /// The rows that precede (are newer than) this id; returned in list
    /// order, newest first, ending just before the id.
    Before(Id),
    /// The oldest rows, in list order.
    Last,
}

impl<Id> Seek<Id> {
    /// The same place, with the id turned into another type.
    pub fn map<J>(self, f: impl FnOnce(Id) -> J) -> Seek<J> {
        match self {
            Seek::First => Seek::First,
            Seek::After(id) => Seek::After(f(id)),
            Seek::Before(id) => Seek::Before(f(id)),
            Seek::Last => Seek::Last,
        }
    }
}
