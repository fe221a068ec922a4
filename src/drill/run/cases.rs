//! The cases that need no clock beyond their own calls: each drives the
//! receiver through one failure boundary and states what it expects.

use std::time::Duration;

use serde_json::{Value, json};

use super::case::CaseRun;
use super::record::CaseRecord;
use super::settings::Settings;
use super::spec::{Needs, Spec};
use super::target::Target;

/// The commit a `delay_ms` fault slows down in `real_timeout`.
const SLOW_COMMIT_MS: u64 = 1500;
/// When the caller of `real_timeout` gives up: well before the commit.
const CALLER_LIMIT: Duration = Duration::from_millis(400);
/// The commit `crash_mid_call` kills at a random point of.
const CRASH_COMMIT_MS: u64 = 1000;

/// Runs one of the cases above; `None` when Ctrl-C stopped it.
pub fn run(t: &Target, spec: &Spec, s: &Settings) -> Option<CaseRecord> {
    let mut c = CaseRun::new(t, spec, &s.params, 3);
    let expected = match spec.needs {
        Needs::Faults => faulted(&mut c, spec, &s.params)?,
        _ => plain(&mut c, spec, s)?,
    };
    if t.stopped() {
        return None;
    }
    Some(c.finish(&expected))
}

type Expected = Vec<(&'static str, Value)>;

fn success(effects: i64) -> Expected {
    vec![
        ("effect_count", json!(effects)),
        ("caller_result", json!("success")),
    ]
}

/// The cases that need the receiver to inject faults.
fn faulted(c: &mut CaseRun, spec: &Spec, params: &Value) -> Option<Expected> {
    let t = c.t;
    let key = c.key(1);
    Some(match spec.id {
        "changed_key" => {
            c.attempt(&key, params, Some("after_effect"), None);
            let other = c.key(2);
            stop_or(t, || c.attempt(&other, params, None, None))?;
            c.rec.hazard = Some("a new key per attempt made a second effect of one intent".into());
            success(2)
        }
        "stable_key" | "lost_response" => {
            c.attempt(&key, params, Some("after_effect"), None);
            stop_or(t, || c.attempt(&key, params, None, None))?;
            lost_response_ids(c);
            let mut e = success(1);
            if spec.id == "lost_response" {
                e.push(("same_result_id", json!(true)));
            }
            e
        }
        "fault_before_effect" => {
            c.attempt(&key, params, Some("before_effect"), None);
            stop_or(t, || c.attempt(&key, params, None, None))?;
            success(1)
        }
        "budget_exhausted" => {
            for _ in 0..3 {
                stop_or(t, || c.attempt(&key, params, Some("before_effect"), None))?;
            }
            vec![
                ("effect_count", json!(0)),
                ("caller_result", json!("exhausted")),
                ("attempt_count", json!(3)),
            ]
        }
        "real_timeout" => {
            let slow = format!("delay_ms={SLOW_COMMIT_MS}");
            c.attempt(&key, params, Some(&slow), Some(CALLER_LIMIT));
            stop_or(t, || c.attempt(&key, params, None, None))?;
            success(1)
        }
        "crash_mid_call" => {
            let slow = format!("delay_ms={CRASH_COMMIT_MS}");
            let at = Duration::from_millis(random_below(CRASH_COMMIT_MS));
            c.rec.notes.push(format!(
                "killed with SIGKILL {} ms into the call",
                at.as_millis()
            ));
            c.attempt(&key, params, Some(&slow), Some(at));
            stop_or(t, || c.attempt(&key, params, None, None))?;
            success(1)
        }
        _ => return None,
    })
}

/// The cases any receiver with a retry can play.
fn plain(c: &mut CaseRun, spec: &Spec, s: &Settings) -> Option<Expected> {
    let (t, params) = (c.t, &s.params);
    let key = c.key(1);
    Some(match spec.id {
        "parameter_mismatch" => {
            c.attempt(&key, params, None, None);
            let first = c.rec.result_ids();
            let other = other_params(params);
            stop_or(t, || c.attempt(&key, &other, None, None))?;
            let replayed = c.rec.attempts.last().and_then(|a| a.result_id.clone());
            if let Some(id) = replayed {
                c.rec.notes.push(format!(
                    "other params under the key were answered with result {id}{}: params ignored \
                     on replay",
                    if first.contains(&id) {
                        " (the first one)"
                    } else {
                        ""
                    }
                ));
            }
            vec![
                ("effect_count", json!(1)),
                ("caller_result", json!("conflict")),
            ]
        }
        "later_invocation" => {
            c.attempt(&key, params, None, None);
            stop_or(t, || c.attempt(&key, params, None, None))?;
            same_ids(c);
            let mut e = success(1);
            e.push(("same_result_id", json!(true)));
            e
        }
        "concurrent_same_key" => {
            c.rec.max_attempts = s.concurrency as i64;
            c.at_once(s.concurrency, &key, params);
            let ids = c.rec.result_ids();
            c.rec
                .observed
                .insert("distinct_result_ids".into(), json!(ids.len()));
            let mut e = success(1);
            e.push(("distinct_result_ids", json!(1)));
            e
        }
        _ => return None,
    })
}

/// Runs `call` unless Ctrl-C came: `None` stops the case.
fn stop_or<T>(t: &Target, call: impl FnOnce() -> T) -> Option<T> {
    (!t.stopped()).then(call)
}

/// Whether the retry's result id is the effect the lost response left
/// (the first one listed or looked up).
fn lost_response_ids(c: &mut CaseRun) {
    let lost = c
        .rec
        .events
        .iter()
        .find(|e| e.event == "committed" && e.attempt == Some(1))
        .and_then(|e| e.detail.get("effect_id").cloned());
    let replied = c.rec.attempts.last().and_then(|a| a.result_id.clone());
    let same = match (lost, replied) {
        (Some(Value::String(lost)), Some(replied)) => json!(lost == replied),
        // Without `effects` or a lookup the lost effect's id is unknown.
        _ => Value::Null,
    };
    c.rec.observed.insert("same_result_id".into(), same);
}

/// Whether every acknowledged attempt got one and the same result id.
fn same_ids(c: &mut CaseRun) {
    let ids = c.rec.result_ids();
    let acknowledged = c.rec.attempts.iter().all(|a| a.result_id.is_some());
    c.rec.observed.insert(
        "same_result_id".into(),
        json!(acknowledged && ids.len() == 1),
    );
}

/// `params` with one more field, so it is another request under one key.
pub fn other_params(params: &Value) -> Value {
    match params {
        Value::Object(o) => {
            let mut o = o.clone();
            o.insert("drill_changed".into(), json!(true));
            Value::Object(o)
        }
        other => json!({ "drill_changed": true, "was": other }),
    }
}

/// A number below `n` that differs from run to run: where the crash
/// strikes. Not for secrets.
fn random_below(n: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    50 + h.finish() % n.saturating_sub(100).max(1)
}
