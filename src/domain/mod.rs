//! The ledger's vocabulary as plain Rust types: operations, attempts, events,
//! decisions and the receivers' contracts. Pure data; nothing here touches the
//! database, the terminal or the clock (callers pass `now`).

pub mod clusters;
pub mod evidence;
#[cfg(test)]
pub(crate) mod fixture;
pub mod key_expiry;
mod malformed;
mod probe;
pub mod retry_plan;
pub mod retry_run;
pub mod retry_status;
pub mod rules;
mod sort;
mod time;

use std::fmt;

use chrono::{DateTime, Utc};

pub use clusters::{Cluster, ClusterDimension, ClusterSection, Clusters};
pub use malformed::Malformed;
pub use probe::{NewProbe, Probe, ProbeOutcome};
pub use sort::{Sort, SortColumn, SortKey, SortValue};
pub use time::{TIME_FORMATS, age, format_time, human_duration, parse_time};

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

/// The state of an operation (ledger-v1, "States"). Services write the
/// ledger with plain SQL, so a word we do not know is kept as it is
/// (`Unrecognized`) and shown, never coerced: such an operation is outside
/// the triage queue and no decision applies to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum State {
    Reserved,
    Completed,
    NotApplied,
    Unknown,
    Exhausted,
    Conflict,
    RetryPending,
    Unrecognized(String),
}

impl State {
    /// Every state word of the contract, in the order screens list them.
    pub const KNOWN: [State; 7] = [
        State::Unknown,
        State::Exhausted,
        State::Conflict,
        State::Reserved,
        State::RetryPending,
        State::Completed,
        State::NotApplied,
    ];

    /// States that are in the triage queue regardless of time. `reserved`
    /// joins them only once its lease has passed (see [`Operation::in_queue`]).
    pub const QUEUE: [State; 3] = [State::Unknown, State::Exhausted, State::Conflict];

    pub fn parse(word: &str) -> State {
        match word {
            "reserved" => State::Reserved,
            "completed" => State::Completed,
            "not_applied" => State::NotApplied,
            "unknown" => State::Unknown,
            "exhausted" => State::Exhausted,
            "conflict" => State::Conflict,
            "retry_pending" => State::RetryPending,
            other => State::Unrecognized(other.to_string()),
        }
    }

    /// Like [`State::parse`] but refuses words outside the contract; for
    /// operator input such as `--state` or `state:` in a filter.
    pub fn parse_known(word: &str) -> Option<State> {
        match State::parse(word) {
            State::Unrecognized(_) => None,
            s => Some(s),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            State::Reserved => "reserved",
            State::Completed => "completed",
            State::NotApplied => "not_applied",
            State::Unknown => "unknown",
            State::Exhausted => "exhausted",
            State::Conflict => "conflict",
            State::RetryPending => "retry_pending",
            State::Unrecognized(s) => s,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// The kinds of operator decision (`decisions.decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecisionKind {
    Applied,
    NotApplied,
    RetrySameKey,
    CancelRetry,
    Reopen,
}

impl DecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Applied => "applied",
            DecisionKind::NotApplied => "not_applied",
            DecisionKind::RetrySameKey => "retry_same_key",
            DecisionKind::CancelRetry => "cancel_retry",
            DecisionKind::Reopen => "reopen",
        }
    }

    pub fn parse(word: &str) -> Option<DecisionKind> {
        Some(match word {
            "applied" => DecisionKind::Applied,
            "not_applied" => DecisionKind::NotApplied,
            "retry_same_key" => DecisionKind::RetrySameKey,
            "cancel_retry" => DecisionKind::CancelRetry,
            "reopen" => DecisionKind::Reopen,
            _ => return None,
        })
    }
}

impl fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recorded decision: a row of `decisions`. `decision` is kept as a string
/// because the audit trail may hold words written by a newer console.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub id: DecisionId,
    pub op_id: OperationId,
    pub decision: String,
    pub from_state: String,
    pub to_state: String,
    pub result_id: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    pub operator: String,
    pub decided_at: String,
    pub op_version: i64,
    pub undoes: Option<DecisionId>,
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

/// A receiver's contract: a row of `op_types`.
#[derive(Debug, Clone, PartialEq)]
pub struct OpTypeContract {
    pub op_type: String,
    pub idempotent: bool,
    pub key_retention_s: Option<i64>,
    pub description: Option<String>,
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
        match &self.contract {
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
}

impl OperationRow {
    pub fn is_stale_reservation(&self, now: DateTime<Utc>) -> bool {
        stale_reservation(&self.state, self.lease_expires_at.as_deref(), now)
    }
}

/// What an operator asks the ledger to record. Built by the CLI or the
/// console, validated against fresh data inside the write transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionDraft {
    pub op_id: OperationId,
    pub kind: DecisionKind,
    pub result_id: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    /// Record `not_applied` although a `committed` event exists. Needs a note.
    pub override_committed: bool,
    pub operator: String,
    /// The operation version the operator saw; the write happens only if the
    /// ledger still has it (compare-and-set).
    pub expected_version: i64,
    /// For `reopen`: the decision being undone.
    pub undoes: Option<DecisionId>,
}

/// What a successful decision wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionReceipt {
    pub decision_id: DecisionId,
    pub op_id: OperationId,
    pub kind: DecisionKind,
    pub from_state: State,
    pub to_state: State,
    pub new_version: i64,
    pub retry_request_id: Option<i64>,
    /// For `retry_same_key` on an `exhausted` operation: the attempt beyond
    /// `max_attempts` this retry spends.
    pub extra_attempt: bool,
}

/// A `reserved` operation whose lease has passed, or that has no lease at
/// all (nobody can be said to own it), is stale: it joins the triage queue.
pub fn stale_reservation(
    state: &State,
    lease_expires_at: Option<&str>,
    now: DateTime<Utc>,
) -> bool {
    *state == State::Reserved
        && match lease_expires_at {
            None => true,
            Some(t) => parse_time(t).is_some_and(|lease| lease <= now),
        }
}

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

/// Operations per state, for the header and `settle list` summaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Every state word present, with its count, in [`State::KNOWN`] order
    /// and unrecognised words after.
    pub by_state: Vec<(State, i64)>,
    /// `reserved` operations whose lease has passed (part of the queue).
    pub stale_reserved: i64,
    pub total: i64,
    /// The total and the counts of the states outside the queue are the
    /// database's estimate (PostgreSQL on a large ledger), shown with `≈`;
    /// the queue's states and stale reservations are always exact.
    pub estimated: bool,
}

impl StateCounts {
    pub fn get(&self, state: &State) -> i64 {
        self.by_state
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n)
    }

    /// Whether `state`'s count is an estimate (see [`StateCounts::estimated`]).
    pub fn is_estimate(&self, state: &State) -> bool {
        self.estimated && !State::QUEUE.contains(state) && *state != State::Reserved
    }

    /// Size of the triage queue.
    pub fn queue(&self) -> i64 {
        State::QUEUE.iter().map(|s| self.get(s)).sum::<i64>() + self.stale_reserved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_in_every_form_a_service_writes_compare_as_instants() {
        let now = parse_time("2026-06-01T12:00:00Z").unwrap();
        let stale = |lease| stale_reservation(&State::Reserved, Some(lease), now);
        assert!(stale("2026-06-01T13:00:00+02:00"), "11:00 UTC has passed");
        assert!(!stale("2026-06-01T12:30:00Z"));
        assert!(stale("2026-06-01 11:59:59"));
        assert!(!stale("2026-06-01 12:00:01.5"));
        assert!(stale("1780300000"), "epoch seconds before now");
        assert!(!stale("1790000000"));
        assert!(!stale("soon"), "text that is not a time is never stale");
        assert!(stale_reservation(&State::Reserved, None, now));
    }
}
