//! An operation with its history, to insert as a service would have
//! written it.

use super::operation::Outcome;
use super::state::State;

/// An operation to insert with its history, as a service would have written
/// it: what `settle drill import`, the sample data and the benchmarks' data
/// generator hand to [`crate::store::Ledger::import`]. Inserting is idempotent
/// on `(account, op_type, idem_key)`: an existing operation is left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOperation {
    pub account: String,
    pub op_type: String,
    pub idem_key: String,
    pub fingerprint: String,
    pub params: Option<String>,
    pub state: State,
    pub result_id: Option<String>,
    pub max_attempts: i64,
    pub deadline_at: Option<String>,
    pub lease_expires_at: Option<String>,
    pub key_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub attempts: Vec<NewAttempt>,
    pub events: Vec<NewEvent>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewAttempt {
    pub attempt: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub response: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub attempt: Option<i64>,
    pub at: String,
    pub event: String,
    /// A JSON object as text, or `None`.
    pub detail: Option<String>,
}
