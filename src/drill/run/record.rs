//! What a drill run records of one case, and its `retry-drill/1` form: the
//! attempts as the caller saw them, the events the caller could observe
//! (results, the receiver's `effects` listing, lookups), the effects, the
//! expectation and what was observed. A leaf: the cases fill it, the
//! writer serialises it.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

/// One call of the receiver's `retry`, as its caller saw it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// 1-based, in the order the calls started.
    pub attempt: i64,
    /// The concurrent caller that made it (1-based), for the cases where
    /// several callers run at once.
    pub caller: Option<usize>,
    pub key: String,
    pub params: Value,
    /// `before_effect`, `after_commit` (the contract's words), `delay_ms=N`.
    pub fault: Option<String>,
    /// `success`, `conflict`, `timeout` (the caller killed it) or `error`.
    pub result: &'static str,
    pub result_id: Option<String>,
    /// How the call ended, in words (`exit 5`, `killed after 0.5 s`).
    pub exit: String,
    /// The last line of the receiver's stderr, sanitised.
    pub said: Option<String>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
}

/// One thing the caller observed during the case.
#[derive(Debug, Clone)]
pub struct Event {
    pub attempt: Option<i64>,
    pub event: &'static str,
    pub at: DateTime<Utc>,
    pub detail: Map<String, Value>,
}

/// One case as it ran.
#[derive(Debug, Clone, Default)]
pub struct CaseRecord {
    pub case: &'static str,
    pub title: &'static str,
    pub strategy: &'static str,
    /// What the case expects, in a sentence.
    pub expectation: &'static str,
    pub account: String,
    pub op_type: String,
    pub key: String,
    pub params: Value,
    pub fingerprint: String,
    pub max_attempts: i64,
    pub attempts: Vec<Attempt>,
    pub events: Vec<Event>,
    /// The receiver's `effects` listing for the case's account at its
    /// end; `None` when the receiver has no `effects` or it failed.
    pub effects: Option<Vec<String>>,
    /// The effect count and how it is known (`effects`, `lookup`), or
    /// `None`: unknown, never guessed.
    pub effect_count: Option<(usize, &'static str)>,
    /// Why the count is unknown, when it is.
    pub count_unknown: Option<String>,
    pub expected: Map<String, Value>,
    pub observed: Map<String, Value>,
    /// A harm the case exists to show (a second effect after expiry).
    pub hazard: Option<String>,
    /// Lines worth reading beside the verdict.
    pub notes: Vec<String>,
    pub elapsed_ms: u64,
}

impl CaseRecord {
    /// Every expected field observed equal; `None` when one could not be
    /// observed (an unknown effect count is not a pass).
    pub fn passed(&self) -> Option<bool> {
        let mut all = true;
        for (field, want) in &self.expected {
            match self.observed.get(field) {
                None | Some(Value::Null) => return None,
                Some(got) => all &= got == want,
            }
        }
        Some(all)
    }

    /// The distinct result ids the caller was given, in order.
    pub fn result_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for id in self.attempts.iter().filter_map(|a| a.result_id.clone()) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    /// The case in `retry-drill/1`, with this runner's fields beside the
    /// contract's (kept and shown raw by any reader).
    pub fn to_json(&self) -> Value {
        let attempts: Vec<Value> = self.attempts.iter().map(attempt_json).collect();
        let events: Vec<Value> = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut o = Map::new();
                o.insert("seq".into(), json!(i + 1));
                o.insert("attempt".into(), json!(e.attempt));
                o.insert("event".into(), json!(e.event));
                o.insert("at".into(), json!(stamp(e.at)));
                o.extend(e.detail.clone());
                Value::Object(o)
            })
            .collect();
        let mut case = json!({
            "case": self.case,
            "title": self.title,
            "strategy": self.strategy,
            "expectation": self.expectation,
            "operation": {
                "account": self.account,
                "op_type": self.op_type,
                "key": self.key,
                "params": self.params,
                "fingerprint": self.fingerprint,
            },
            "max_attempts": self.max_attempts,
            "attempts": attempts,
            "events": events,
        });
        let Value::Object(o) = &mut case else {
            return case;
        };
        if let Some(effects) = &self.effects {
            let effects: Vec<Value> = effects.iter().map(|id| json!({ "id": id })).collect();
            o.insert(
                "final_state".into(),
                json!({ "effects": effects, "keys": {} }),
            );
        }
        o.insert("expected".into(), Value::Object(self.expected.clone()));
        o.insert("observed".into(), Value::Object(self.observed.clone()));
        o.insert("passed".into(), json!(self.passed()));
        o.insert(
            "effect_count_from".into(),
            json!(self.effect_count.map(|(_, from)| from)),
        );
        if let Some(why) = &self.count_unknown {
            o.insert("effect_count_unknown".into(), json!(why));
        }
        if let Some(hazard) = &self.hazard {
            o.insert("hazard".into(), json!(hazard));
        }
        if !self.notes.is_empty() {
            o.insert("notes".into(), json!(self.notes));
        }
        o.insert("elapsed_ms".into(), json!(self.elapsed_ms));
        case
    }
}

fn attempt_json(a: &Attempt) -> Value {
    let mut o = Map::new();
    o.insert("attempt".into(), json!(a.attempt));
    if let Some(caller) = a.caller {
        o.insert("caller".into(), json!(caller));
    }
    o.insert("key".into(), json!(a.key));
    o.insert("params".into(), a.params.clone());
    o.insert("fault".into(), json!(a.fault));
    o.insert("started_at".into(), json!(stamp(a.started_at)));
    o.insert("result".into(), json!(a.result));
    if let Some(id) = &a.result_id {
        o.insert("response".into(), json!({ "result_id": id }));
    }
    o.insert("exit".into(), json!(a.exit));
    if let Some(said) = &a.said {
        o.insert("stderr".into(), json!(said));
    }
    o.insert("ended_at".into(), json!(stamp(a.ended_at)));
    Value::Object(o)
}

/// RFC 3339 with milliseconds, as the reference drill writes times.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}
