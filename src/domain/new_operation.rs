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

impl NewOperation {
    /// An operation of `op_type` under `account` and `key`, `unknown`, with
    /// three attempts allowed and no history yet: where a test's or a
    /// sample's operation starts, each field it cares about then set by name
    /// instead of all fifteen written out every time.
    pub fn builder(account: &str, op_type: &str, key: &str) -> NewOperationBuilder {
        NewOperationBuilder(NewOperation {
            account: account.into(),
            op_type: op_type.into(),
            idem_key: key.into(),
            fingerprint: "sha256:00".into(),
            params: None,
            state: State::Unknown,
            result_id: None,
            max_attempts: 3,
            deadline_at: None,
            lease_expires_at: None,
            key_expires_at: None,
            created_at: "2026-11-06T10:00:00Z".into(),
            updated_at: "2026-11-06T10:00:00Z".into(),
            attempts: Vec::new(),
            events: Vec::new(),
        })
    }
}

/// A [`NewOperation`] being put together; see [`NewOperation::builder`].
#[derive(Debug, Clone)]
pub struct NewOperationBuilder(NewOperation);

impl NewOperationBuilder {
    pub fn state(mut self, state: State) -> Self {
        self.0.state = state;
        self
    }

    pub fn fingerprint(mut self, fingerprint: &str) -> Self {
        self.0.fingerprint = fingerprint.into();
        self
    }

    pub fn params(mut self, params: &str) -> Self {
        self.0.params = Some(params.into());
        self
    }

    pub fn deadline_at(mut self, at: impl Into<String>) -> Self {
        self.0.deadline_at = Some(at.into());
        self
    }

    pub fn lease_expires_at(mut self, at: impl Into<String>) -> Self {
        self.0.lease_expires_at = Some(at.into());
        self
    }

    pub fn key_expires_at(mut self, at: impl Into<String>) -> Self {
        self.0.key_expires_at = Some(at.into());
        self
    }

    pub fn created_at(mut self, at: impl Into<String>) -> Self {
        self.0.created_at = at.into();
        self
    }

    pub fn updated_at(mut self, at: impl Into<String>) -> Self {
        self.0.updated_at = at.into();
        self
    }

    /// Adds one attempt to the history.
    pub fn attempt(mut self, attempt: NewAttempt) -> Self {
        self.0.attempts.push(attempt);
        self
    }

    /// Adds one event to the history.
    pub fn event(mut self, event: NewEvent) -> Self {
        self.0.events.push(event);
        self
    }

    pub fn build(self) -> NewOperation {
        self.0
    }
}
