//! The cases a drill run knows: id, title, what each expects and what it
//! needs from the receiver, in run order. A leaf: the runner and the cases
//! read it.

/// What a case needs before it can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// A `retry` only.
    Retry,
    /// `faults = true`.
    Faults,
    /// A declared `key_retention_s` within `--max-wait`.
    Retention,
    /// A `lookup`, and a retention to watch within `--max-wait`.
    LookupRetention,
    /// Never runs against a receiver: the receivers contract always sends
    /// a key.
    NoKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub id: &'static str,
    pub title: &'static str,
    pub strategy: &'static str,
    pub expectation: &'static str,
    pub needs: Needs,
}

const fn spec(
    id: &'static str,
    title: &'static str,
    strategy: &'static str,
    expectation: &'static str,
    needs: Needs,
) -> Spec {
    Spec {
        id,
        title,
        strategy,
        expectation,
        needs,
    }
}

/// Every case, in the order they run. The seven reference cases first
/// (where a receiver can play them), then the failure boundaries.
pub const CASES: [Spec; 13] = [
    spec(
        "naive_retry",
        "No key: retry after a lost response",
        "no_key",
        "a second effect (the hazard of retrying without a key)",
        Needs::NoKey,
    ),
    spec(
        "changed_key",
        "New key for each attempt, after a lost response",
        "key_per_attempt",
        "two effects: the receiver cannot tell a retry from a new request",
        Needs::Faults,
    ),
    spec(
        "stable_key",
        "Same key reused after a lost response",
        "stable_key",
        "one effect, and success",
        Needs::Faults,
    ),
    spec(
        "parameter_mismatch",
        "Same key, other parameters",
        "stable_key",
        "refused (exit 3), and no new effect",
        Needs::Retry,
    ),
    spec(
        "fault_before_effect",
        "Failure before any effect, then a retry",
        "stable_key",
        "one effect, and success",
        Needs::Faults,
    ),
    spec(
        "later_invocation",
        "Acknowledged success, then a later run with the same key",
        "stable_key",
        "the same result id replayed, one effect",
        Needs::Retry,
    ),
    spec(
        "budget_exhausted",
        "Every attempt fails before the effect",
        "stable_key",
        "no effect, and the budget exhausted",
        Needs::Faults,
    ),
    spec(
        "concurrent_same_key",
        "Concurrent callers of one key and params",
        "stable_key",
        "exactly one effect and one result id for every caller",
        Needs::Retry,
    ),
    spec(
        "real_timeout",
        "The caller times out a slow commit, then retries",
        "stable_key",
        "one effect: the killed call committed nothing, the retry did",
        Needs::Faults,
    ),
    spec(
        "crash_mid_call",
        "The call is killed (SIGKILL) during a delayed commit, then retried",
        "stable_key",
        "one effect",
        Needs::Faults,
    ),
    spec(
        "lost_response",
        "The effect commits but its response is lost, then a same-key retry",
        "stable_key",
        "the same result id as the lost effect, and one effect",
        Needs::Faults,
    ),
    spec(
        "expiry_retry",
        "A same-key retry after the declared key retention and a margin",
        "stable_key",
        "the hazard: a second effect, the key being forgotten",
        Needs::Retention,
    ),
    spec(
        "observed_retention",
        "How long the receiver remembers a key, against the declared retention",
        "stable_key",
        "the key remembered for at least the declared key_retention_s",
        Needs::LookupRetention,
    ),
];

/// The case named `id`.
pub fn find(id: &str) -> Option<&'static Spec> {
    CASES.iter().find(|c| c.id == id)
}
