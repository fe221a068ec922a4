//! One operation and its history as the ledger holds them: the row, its
//! attempts, events and retry requests, its receiver's contract, the
//! detail that gathers them, and the list's one-line row.

use chrono::{DateTime, Utc};

use super::decision::Decision;
pub use super::declared::OpTypeContract;
use super::declared::{self, Declarations, FileContract};
use super::ids::{DecisionId, OperationId};
use super::malformed::Malformed;
use super::probe::Probe;
use super::state::{State, stale_reservation};
use super::time::human_duration;

/// One logical operation: a row of `operations`.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub id: OperationId,
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
    pub version: i64,
    /// Cells that were not what their column allows; empty for a sound row.
    pub malformed: Vec<Malformed>,
    /// In a group of ledgers, which one the row is from and its id there;
    /// None for a single ledger's row.
    pub origin: Option<super::group::Origin>,
}

impl Operation {
    /// `account/op_type/key`, the natural key operators type.
    pub fn natural_key(&self) -> String {
        format!("{}/{}/{}", self.account, self.op_type, self.idem_key)
    }

    /// See [`stale_reservation`].
    pub fn is_stale_reservation(&self, now: DateTime<Utc>) -> bool {
        stale_reservation(&self.state, self.lease_expires_at.as_deref(), now)
    }

    /// In the triage queue of the contract: unknown, exhausted, conflict, and
    /// reserved once its lease has passed.
    pub fn in_queue(&self, now: DateTime<Utc>) -> bool {
        State::QUEUE.contains(&self.state) || self.is_stale_reservation(now)
    }
}

impl Operation {
    /// The first malformed identity column ([`Malformed::IDENTITY`]), if
    /// any: no decision is recorded on such a row.
    pub fn malformed_identity(&self) -> Option<&Malformed> {
        self.malformed
            .iter()
            .find(|m| Malformed::IDENTITY.contains(&m.column))
    }
}

/// What an attempt ended with (`attempts.outcome`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Timeout,
    Error,
    Conflict,
    InFlight,
    Unrecognized(String),
}

impl Outcome {
    pub fn parse(word: &str) -> Outcome {
        match word {
            "success" => Outcome::Success,
            "timeout" => Outcome::Timeout,
            "error" => Outcome::Error,
            "conflict" => Outcome::Conflict,
            "in_flight" => Outcome::InFlight,
            other => Outcome::Unrecognized(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Outcome::Success => "success",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
            Outcome::Conflict => "conflict",
            Outcome::InFlight => "in_flight",
            Outcome::Unrecognized(s) => s,
        }
    }
}

/// One attempt of an operation: a row of `attempts`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub op_id: OperationId,
    pub attempt: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub response: Option<String>,
}

/// One event: a row of `events`. `event` is kept as written; unknown words
/// are shown as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: i64,
    pub op_id: OperationId,
    pub attempt: Option<i64>,
    pub at: String,
    pub event: String,
    pub detail: Option<String>,
}

impl Event {
    /// `detail.effect_id` for a `committed` or `replayed` event, if the
    /// detail is a JSON object that carries one.
    pub fn effect_id(&self) -> Option<String> {
        let detail: serde_json::Value = serde_json::from_str(self.detail.as_deref()?).ok()?;
        match detail.get("effect_id")? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// A row of `retry_requests`, the outbox a worker drains.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryRequest {
    pub id: i64,
    pub op_id: OperationId,
    pub idem_key: String,
    pub requested_at: String,
    pub requested_by: String,
    /// `queued`, `claimed`, `done`, `failed` or `cancelled`.
    pub status: String,
    pub decision_id: DecisionId,
    /// What the worker wrote of its progress (schema 5); all empty on a
    /// ledger no worker of settle's has touched.
    pub progress: RetryProgress,
}

/// A worker's columns of a retry request: who holds it, until when, how
/// many times it ran, and how it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryProgress {
    pub claimed_by: Option<String>,
    /// RFC 3339; a claim past this instant may be taken by another worker.
    pub claim_expires_at: Option<String>,
    /// How many times a worker claimed it (more than one: a claim lapsed).
    pub runs: i64,
    pub finished_at: Option<String>,
    /// The result id, or why it failed or was refused.
    pub outcome: Option<String>,
}

/// Everything the console knows about one operation, for `show`, the detail
/// pane and the decision rules.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationDetail {
    pub operation: Operation,
    pub attempts: Vec<Attempt>,
    pub events: Vec<Event>,
    pub decisions: Vec<Decision>,
    pub retry_requests: Vec<RetryRequest>,
    /// What receivers said when asked by the key, oldest first.
    pub probes: Vec<Probe>,
    /// `None` when `op_types` has no row for this operation's type.
    pub contract: Option<OpTypeContract>,
    /// What the receivers file declares for this operation's type, where
    /// it declares anything ([`super::declared`]).
    pub declared: Option<FileContract>,
    /// The latest drill of this operation's op type, if one was recorded.
    pub drill: Option<super::drilled::DrillVerdict>,
    /// Malformed cells in the attempts, events, decisions, retry requests
    /// and contract, one line each (`attempt 2: error: a 3-byte BLOB`);
    /// the values themselves are shown made visible in place.
    pub history_malformed: Vec<String>,
}

impl OperationDetail {
    /// Effect ids of `committed` events, in order. A committed effect means
    /// the receiver did the work, whether or not the caller heard back.
    pub fn committed_effects(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e.event == "committed")
            .map(|e| e.effect_id().unwrap_or_default())
            .collect()
    }

    /// True when any event says an effect was committed.
    pub fn has_committed_event(&self) -> bool {
        self.events.iter().any(|e| e.event == "committed")
    }

    /// The retry request still waiting for a worker, if any.
    pub fn queued_retry(&self) -> Option<&RetryRequest> {
        self.retry_requests
            .iter()
            .rev()
            .find(|r| r.status == "queued")
    }

    /// The receiver's contract in one phrase, for the detail and `show`.
    pub fn contract_summary(&self) -> String {
        match &self.effective_contract() {
            None => "no op_types row: the receiver's contract is unknown".to_string(),
            Some(c) => format!(
                "{}, {}",
                if c.idempotent {
                    "idempotent (honours keys)"
                } else {
                    "NOT verified idempotent"
                },
                match c.key_retention_s {
                    Some(s) => format!("keeps keys {}", human_duration(s)),
                    None => "keeps keys forever".to_string(),
                }
            ),
        }
    }

    /// How that contract is known: declared, or drilled on a date with the
    /// run ([`super::drilled::contract_source`]).
    pub fn contract_source(&self) -> String {
        let by = declared::declared_by(self.contract.as_ref(), self.declared.as_ref());
        super::drilled::contract_source(by.as_deref(), self.drill.as_ref())
    }

    /// The contract the rules hold this operation to: its `op_types` row,
    /// what the receivers file declares, or the stricter of the two
    /// ([`super::declared::merged`]).
    pub fn effective_contract(&self) -> Option<OpTypeContract> {
        let op_type = &self.operation.op_type;
        declared::merged(op_type, self.contract.as_ref(), self.declared.as_ref())
    }

    /// Takes what `declarations` says of this operation's type: the store
    /// does it wherever it reads an operation to show or judge.
    pub fn declare(&mut self, declarations: &Declarations) {
        self.declared = declarations.of(&self.operation.op_type);
    }

    /// Number of attempts recorded (the highest attempt number).
    pub fn attempts_used(&self) -> i64 {
        self.attempts.iter().map(|a| a.attempt).max().unwrap_or(0)
    }
}

/// One line of a list: the columns a person scans, fetched a page at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationRow {
    pub id: OperationId,
    pub state: State,
    pub account: String,
    pub op_type: String,
    pub idem_key: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub last_event: Option<String>,
    pub last_error: Option<String>,
    pub result_id: Option<String>,
    pub lease_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub version: i64,
    /// For a `retry_pending` operation, its newest retry request's status
    /// (`queued`, `claimed`, `done`, `failed`), so the list shows a
    /// worker's progress live; `None` otherwise.
    pub retry_status: Option<String>,
    /// Cells that were not what their column allows; empty for a sound row.
    pub malformed: Vec<Malformed>,
    /// In a group of ledgers, which one the row is from and its id there;
    /// None for a single ledger's row.
    pub origin: Option<super::group::Origin>,
}

impl OperationRow {
    pub fn is_stale_reservation(&self, now: DateTime<Utc>) -> bool {
        stale_reservation(&self.state, self.lease_expires_at.as_deref(), now)
    }
}
