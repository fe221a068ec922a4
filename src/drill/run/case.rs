//! One case under way: its calls, what the caller observed after each
//! (new ids in the receiver's `effects` listing, a replayed id, a refusal),
//! and, at its end, the effect count from `effects` or lookups, unknown
//! when neither can tell.

use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Map, Value, json};

use super::record::{Attempt, CaseRecord, Event};
use super::spec::Spec;
use super::target::{Called, Target};
use crate::receivers::LookupOutcome;

pub struct CaseRun<'a> {
    pub t: &'a Target<'a>,
    pub rec: CaseRecord,
    /// Effect ids the caller has seen so far (listed or returned).
    seen: Vec<String>,
    /// Every key the case used, for lookups when there is no `effects`.
    keys: Vec<(String, Value)>,
    started: Instant,
}

impl<'a> CaseRun<'a> {
    pub fn new(t: &'a Target<'a>, spec: &Spec, params: &Value, max_attempts: i64) -> CaseRun<'a> {
        let account = format!("drill-{}-{}", t.run_id, spec.id);
        let key = format!("{account}-k1");
        CaseRun {
            t,
            rec: CaseRecord {
                case: spec.id,
                title: spec.title,
                strategy: spec.strategy,
                expectation: spec.expectation,
                account,
                op_type: t.op_type.clone(),
                key,
                params: params.clone(),
                fingerprint: crate::drill::fingerprint(params),
                max_attempts,
                ..CaseRecord::default()
            },
            seen: Vec::new(),
            keys: Vec::new(),
            started: Instant::now(),
        }
    }

    /// The case's own key, with a suffix for another one (`-k2`).
    pub fn key(&self, n: usize) -> String {
        format!("{}-k{n}", self.rec.account)
    }

    /// One retry as the next attempt; what it showed is recorded.
    pub fn attempt(
        &mut self,
        key: &str,
        params: &Value,
        fault: Option<&str>,
        limit: Option<Duration>,
    ) -> Called {
        let n = self.rec.attempts.len() as i64 + 1;
        let subject = self.t.subject(&self.rec.account, key, params);
        let called = self.t.retry(n, &subject, fault, limit);
        self.remember_key(key, params);
        self.observe_attempt(&called, true);
        self.rec.attempts.push(called.attempt.clone());
        called
    }

    /// `n` retries of one key and params started at once (each its own
    /// process); recorded as attempts 1..n, one per caller.
    pub fn at_once(&mut self, n: usize, key: &str, params: &Value) -> Vec<Called> {
        let subject = self.t.subject(&self.rec.account, key, params);
        let t = self.t;
        let mut called: Vec<Called> = std::thread::scope(|scope| {
            let calls: Vec<_> = (1..=n)
                .map(|i| {
                    let subject = &subject;
                    scope.spawn(move || t.retry(i as i64, subject, None, None))
                })
                .collect();
            calls.into_iter().filter_map(|c| c.join().ok()).collect()
        });
        called.sort_by_key(|c| c.attempt.attempt);
        self.remember_key(key, params);
        for c in &mut called {
            c.attempt.caller = Some(c.attempt.attempt as usize);
            self.observe_attempt(c, false);
            self.rec.attempts.push(c.attempt.clone());
        }
        // Effects no caller was told of: which call made them is unknown.
        self.list_new_effects(None, key);
        called
    }

    fn remember_key(&mut self, key: &str, params: &Value) {
        if !self.keys.iter().any(|(k, _)| k == key) {
            self.keys.push((key.to_string(), params.clone()));
        }
    }

    fn event(&mut self, attempt: Option<i64>, event: &'static str, detail: Value) {
        let detail = match detail {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        self.rec.events.push(Event {
            attempt,
            event,
            at: Utc::now(),
            detail,
        });
    }

    /// The events one finished call shows the caller: the fault, the kill,
    /// new effects in the listing (or, without one, a new id returned or
    /// found by lookup), a replay, a refusal.
    /// `list`: look at the `effects` listing now (one call ran since the
    /// last look, so what is new is its doing).
    fn observe_attempt(&mut self, called: &Called, list: bool) {
        let a = &called.attempt;
        let n = Some(a.attempt);
        let failed = !matches!(a.result, "success" | "conflict");
        // The contract's two injected failures; a delay is no failure of
        // its own (the caller's kill, if any, is told below).
        if let Some(fault) = a
            .fault
            .as_deref()
            .filter(|f| failed && matches!(*f, "before_effect" | "after_commit"))
        {
            self.event(n, "timeout_injected", json!({ "phase": fault }));
        }
        if called.killed {
            let ms = (a.ended_at - a.started_at).num_milliseconds();
            self.event(n, "call_killed", json!({ "after_ms": ms }));
        }
        let before = self.seen.clone();
        if list {
            self.list_new_effects(n, &a.key);
        }
        if self.t.receiver.effects.is_none() && failed {
            self.lookup_new_effect(a);
        }
        match (a.result, &a.result_id) {
            ("success", Some(id)) => {
                if before.contains(id) {
                    self.event(n, "replayed", json!({ "effect_id": id }));
                } else if !self.seen.contains(id) {
                    self.seen.push(id.clone());
                    self.event(
                        n,
                        "committed",
                        json!({ "effect_id": id, "key": a.key, "seen_by": "response" }),
                    );
                }
                self.event(n, "success", json!({}));
            }
            ("conflict", _) => self.event(n, "rejected_mismatch", json!({})),
            _ => {}
        }
    }

    /// Ids in the `effects` listing not seen before, as `committed` by
    /// attempt `n` (when one call ran since the last look).
    fn list_new_effects(&mut self, n: Option<i64>, key: &str) {
        let Ok(ids) = self.t.effects(&self.rec.account) else {
            return;
        };
        for id in ids {
            if !self.seen.contains(&id) {
                self.seen.push(id.clone());
                self.event(
                    n,
                    "committed",
                    json!({ "effect_id": id, "key": key, "seen_by": "effects" }),
                );
            }
        }
    }

    /// Without `effects`: a lookup after a failed call may find the effect
    /// it left (the lost response).
    fn lookup_new_effect(&mut self, a: &Attempt) {
        let subject = self.t.subject(&self.rec.account, &a.key, &a.params);
        if let LookupOutcome::Found { result_id } = self.t.lookup(&subject)
            && !self.seen.contains(&result_id)
        {
            self.seen.push(result_id.clone());
            self.event(
                Some(a.attempt),
                "committed",
                json!({ "effect_id": result_id, "key": a.key, "seen_by": "lookup" }),
            );
        }
    }

    /// The caller's final word: the last attempt's result, `exhausted` when
    /// it failed with the budget spent.
    pub fn caller_result(&self) -> Option<&'static str> {
        let last = self.rec.attempts.last()?;
        let spent = self.rec.attempts.len() as i64 >= self.rec.max_attempts;
        Some(match last.result {
            "timeout" | "error" if spent => "exhausted",
            r => r,
        })
    }

    /// Ends the case: the count of effects, then `expected` against what was
    /// observed.
    pub fn finish(mut self, expected: &[(&str, Value)]) -> CaseRecord {
        self.count_effects();
        let observed = &mut self.rec.observed;
        if let Some((n, _)) = self.rec.effect_count {
            observed.insert("effect_count".into(), json!(n));
        }
        observed.insert("attempt_count".into(), json!(self.rec.attempts.len()));
        let caller_result = self.caller_result();
        self.rec
            .observed
            .insert("caller_result".into(), json!(caller_result));
        for (field, value) in expected {
            self.rec.expected.insert(field.to_string(), value.clone());
        }
        self.rec.elapsed_ms = self.started.elapsed().as_millis() as u64;
        self.rec
    }

    /// From `effects` when the receiver has it; else from lookups, which
    /// can only say "none" (every key unknown to the receiver); else
    /// unknown, with the reason.
    fn count_effects(&mut self) {
        match self.t.effects(&self.rec.account) {
            Ok(ids) => {
                self.rec.effect_count = Some((ids.len(), "effects"));
                self.rec.effects = Some(ids);
            }
            Err(why) => {
                let none = self.keys.iter().all(|(key, params)| {
                    let subject = self.t.subject(&self.rec.account, key, params);
                    self.t.lookup(&subject) == LookupOutcome::NotFound
                });
                if none && !self.keys.is_empty() {
                    self.rec.effect_count = Some((0, "lookup"));
                } else {
                    self.rec.count_unknown = Some(format!(
                        "{why}; a lookup shows whether a key's effect exists, not how many"
                    ));
                }
            }
        }
    }
}
