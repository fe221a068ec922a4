//! The import plan: each drill case as one [`NewOperation`] with its attempts
//! and events, in the state its outcome implies. Pure and deterministic (the
//! same file always gives the same plan, so importing twice changes
//! nothing); writing it is [`crate::store::Ledger::import`]'s job.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::analysis::{AttemptClass, caller_result, classify_attempt};
use super::read::{DrillAttempt, DrillCase, DrillFile};
use crate::domain::{NewAttempt, NewEvent, NewOperation, Outcome, State};

/// The time used when neither the case nor the file says when it ran: fixed,
/// so a re-import does not differ.
const EPOCH: &str = "1970-01-01T00:00:00Z";
const DEFAULT_OP_TYPE: &str = "drill_case";

/// One operation per case. `source_name` (the file's name, say) is the
/// account of cases whose operation names none.
///
/// Keys: a case's own `operation.key` when no other case of the file uses
/// the same `(account, op_type, key)`; otherwise, and for cases without a
/// key, `drill:<case>:<fingerprint>`. Cases are distinct operations even
/// when the producer reused a key across them.
pub fn import_plan(file: &DrillFile, source_name: &str) -> Vec<NewOperation> {
    let mut plan: Vec<NewOperation> = file
        .cases
        .iter()
        .map(|case| plan_case(file, case, source_name))
        .collect();
    distinct_keys(file, &mut plan);
    plan
}

fn plan_case(file: &DrillFile, case: &DrillCase, source_name: &str) -> NewOperation {
    let op = case.operation.as_ref();
    let params = op
        .and_then(|op| op.params.as_ref())
        .or_else(|| case.attempts.first().and_then(|a| a.params.as_ref()));
    let fingerprint = op
        .and_then(|op| op.fingerprint.clone())
        .unwrap_or_else(|| super::canonical::fingerprint(params.unwrap_or(&Value::Null)));

    let (created_at, updated_at) = case_times(file, case);
    let attempts = case
        .attempts
        .iter()
        .map(|a| plan_attempt(a, &created_at))
        .collect();
    let events = case
        .events
        .iter()
        .map(|e| NewEvent {
            attempt: e.attempt,
            at: e.at.clone().unwrap_or_else(|| created_at.clone()),
            event: e.event.clone(),
            detail: (!e.detail.is_empty()).then(|| Value::Object(e.detail.clone()).to_string()),
        })
        .collect();

    let (state, result_id) = implied_state(case);
    NewOperation {
        account: op
            .and_then(|op| op.account.clone())
            .unwrap_or_else(|| source_name.to_string()),
        op_type: op
            .and_then(|op| op.op_type.clone())
            .unwrap_or_else(|| DEFAULT_OP_TYPE.to_string()),
        idem_key: op
            .and_then(|op| op.key.clone())
            .filter(|key| !key.is_empty())
            .unwrap_or_else(|| synthetic_key(case, &fingerprint)),
        fingerprint,
        params: params.map(Value::to_string),
        state,
        result_id,
        max_attempts: case
            .max_attempts
            .unwrap_or(case.attempts.len().max(1) as i64),
        deadline_at: None,
        lease_expires_at: None,
        key_expires_at: None,
        created_at,
        updated_at,
        attempts,
        events,
    }
}

/// When the case began and last changed: its first attempt (else first
/// event) and its last event (else last attempt). A case that says neither
/// takes the file's time, else a fixed one, so a re-import never differs.
fn case_times(file: &DrillFile, case: &DrillCase) -> (String, String) {
    let fallback_time = file.generated_at.as_deref().unwrap_or(EPOCH);
    let created_at = case
        .attempts
        .first()
        .and_then(|a| a.started_at.as_deref())
        .or_else(|| case.events.first().and_then(|e| e.at.as_deref()))
        .unwrap_or(fallback_time)
        .to_string();
    let updated_at = case
        .events
        .last()
        .and_then(|e| e.at.as_deref())
        .or_else(|| {
            case.attempts
                .last()
                .and_then(|a| a.ended_at.as_deref().or(a.started_at.as_deref()))
        })
        .unwrap_or(&created_at)
        .to_string();
    (created_at, updated_at)
}

/// One drill attempt as a ledger attempt; one without a start time started
/// when the case did.
fn plan_attempt(a: &DrillAttempt, created_at: &str) -> NewAttempt {
    let (outcome, error) = match a.result.as_deref() {
        Some("success") => (Outcome::Success, None),
        Some("timeout") => (Outcome::Timeout, None),
        Some("conflict") => (Outcome::Conflict, None),
        Some("error") => (Outcome::Error, None),
        // The ledger's outcomes are closed; the producer's word is kept in
        // the error text rather than dropped.
        Some(other) => (Outcome::Error, Some(format!("drill result `{other}`"))),
        None => (
            Outcome::Error,
            Some("the drill file recorded no result".to_string()),
        ),
    };
    let error = error.or_else(|| {
        a.fault
            .as_ref()
            .map(|fault| format!("drill fault injected: {fault}"))
    });
    NewAttempt {
        attempt: a.attempt,
        started_at: a
            .started_at
            .clone()
            .unwrap_or_else(|| created_at.to_string()),
        ended_at: a.ended_at.clone(),
        outcome,
        error,
        response: a.response.as_ref().map(Value::to_string),
    }
}

/// The ledger state the case's outcome implies, and the result id of a
/// completed one.
fn implied_state(case: &DrillCase) -> (State, Option<String>) {
    let Some(last) = case.attempts.last() else {
        // Nothing was attempted as far as the file says; an operator decides.
        return (State::Unknown, None);
    };
    let state = match classify_attempt(case, last) {
        AttemptClass::InvalidIntent => State::Conflict,
        AttemptClass::AppliedAcknowledged => {
            return (State::Completed, last.response.as_ref().and_then(result_id));
        }
        _ if caller_result(case).as_deref() == Some("exhausted") => State::Exhausted,
        AttemptClass::KnownNotApplied => State::NotApplied,
        AttemptClass::OutcomeUnknown => State::Unknown,
    };
    (state, None)
}

/// `report_id`, else the first `*_id` field, else `id`, of a success
/// response.
fn result_id(response: &Value) -> Option<String> {
    let map: &Map<String, Value> = response.as_object()?;
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    map.get("report_id")
        .and_then(text)
        .or_else(|| {
            map.iter()
                .filter(|(k, _)| k.ends_with("_id"))
                .find_map(|(_, v)| text(v))
        })
        .or_else(|| map.get("id").and_then(text))
}

/// The account `settle drill import` gives cases that name none: the
/// file's name without its extension.
pub fn source_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "drill".to_string())
}

fn synthetic_key(case: &DrillCase, fingerprint: &str) -> String {
    format!("drill:{}:{fingerprint}", case.case)
}

/// Makes every `(account, op_type, idem_key)` of the plan distinct: a key
/// several cases share is replaced by each case's synthetic key, and a
/// clash that remains (duplicate case ids) gets the case's position. Both
/// depend only on the file, so the keys are stable across imports.
fn distinct_keys(file: &DrillFile, plan: &mut [NewOperation]) {
    let triple = |op: &NewOperation| (op.account.clone(), op.op_type.clone(), op.idem_key.clone());
    let mut uses: HashMap<_, usize> = HashMap::new();
    for op in plan.iter() {
        *uses.entry(triple(op)).or_default() += 1;
    }
    for (op, case) in plan.iter_mut().zip(&file.cases) {
        if uses.get(&triple(op)).copied().unwrap_or(0) > 1 {
            op.idem_key = synthetic_key(case, &op.fingerprint);
        }
    }
    let mut seen: HashMap<_, usize> = HashMap::new();
    for (index, op) in plan.iter_mut().enumerate() {
        let count = seen.entry(triple(op)).or_default();
        *count += 1;
        if *count > 1 {
            op.idem_key = format!("{}#{}", op.idem_key, index + 1);
        }
    }
}
