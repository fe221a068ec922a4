//! One operation for the domain's unit tests to start from, so each test
//! says only what it changes (`Operation { state, ..fixture::operation() }`)
//! and a new column is added in one place. Test-only.

use super::ids::OperationId;
use super::operation::{OpTypeContract, Operation, OperationDetail};
use super::state::State;

/// An `unknown` operation of `acme/create_report/k-1`, version 1, with no
/// deadline, lease or key expiry.
pub(crate) fn operation() -> Operation {
    Operation {
        id: OperationId(1),
        account: "acme".into(),
        op_type: "create_report".into(),
        idem_key: "k-1".into(),
        fingerprint: "sha256:00".into(),
        params: None,
        state: State::Unknown,
        result_id: None,
        max_attempts: 3,
        deadline_at: None,
        lease_expires_at: None,
        key_expires_at: None,
        created_at: "2026-11-06T10:00:00Z".into(),
        updated_at: "2026-11-06T10:00:05Z".into(),
        version: 1,
        malformed: Vec::new(),
        origin: None,
    }
}

/// `operation` with no history, under an idempotent contract that never
/// forgets keys.
pub(crate) fn detail(operation: Operation) -> OperationDetail {
    OperationDetail {
        contract: Some(OpTypeContract {
            op_type: operation.op_type.clone(),
            idempotent: true,
            key_retention_s: None,
            description: None,
        }),
        operation,
        attempts: Vec::new(),
        events: Vec::new(),
        decisions: Vec::new(),
        retry_requests: Vec::new(),
        probes: Vec::new(),
        declared: None,
        drill: None,
        history_malformed: Vec::new(),
    }
}
