//! An operation's state as the ledger holds it, which of them form the
//! triage queue, and how many operations are in each.

use std::fmt;

use chrono::{DateTime, Utc};

use super::time::parse_time;

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
    /// joins them only once its lease has passed (see
    /// [`super::Operation::in_queue`]).
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
