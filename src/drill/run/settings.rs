//! What a drill run is asked to do: the op type, its params, the cases,
//! the bounds, and the contract the ledger declares for the op type. A
//! leaf: the runner and the cases read it.

use std::time::Duration;

use serde_json::Value;

use super::spec::Spec;

/// Callers started at once in `concurrent_same_key` unless told.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// The longest a case may wait on the clock unless told (`--max-wait`).
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Settings {
    pub op_type: String,
    /// The params every case sends (another set for the mismatch).
    pub params: Value,
    pub cases: Vec<&'static Spec>,
    pub concurrency: usize,
    pub max_wait: Duration,
    pub declared: Declared,
}

/// The op type's contract as the ledger's `op_types` and the receivers
/// file declare it (the stricter where both do); `None` fields: no ledger
/// given, or nothing declared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    pub idempotent: Option<bool>,
    pub key_retention_s: Option<i64>,
}
