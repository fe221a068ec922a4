//! The cases that wait on the clock: a retry after the declared key
//! retention (the hazard it is), and the retention the receiver really
//! keeps. Each waits at most `--max-wait`; Ctrl-C ends the wait. The
//! retention case watches within the wait even where the declared
//! retention is longer: a key forgotten early is proven as soon as it is
//! gone, and a cache with a short TTL behind a long promise is the flaw
//! only a drill can catch.

use std::time::{Duration, Instant};

use serde_json::json;

use super::case::CaseRun;
use super::record::CaseRecord;
use super::settings::Settings;
use super::spec::Spec;
use super::target::{Target, wait};
use crate::receivers::LookupOutcome;

/// Past the declared retention before the expiry case retries, and past it
/// the retention case stops watching: a receiver keeps keys in whole
/// seconds.
pub const MARGIN: Duration = Duration::from_secs(1);
/// How often the retention case asks whether the key is remembered.
const POLL: Duration = Duration::from_millis(200);
/// How much shorter than declared an observed retention may be before it
/// is a flaw: a receiver that keeps keys in whole seconds forgets up to a
/// second early.
pub const SLACK_S: f64 = 1.0;

/// Why a timed case cannot run within `s`, if it cannot.
pub fn not_run(spec: &Spec, s: &Settings, has_lookup: bool) -> Option<String> {
    let Some(retention) = s.declared.key_retention_s else {
        return Some(if s.declared.idempotent.is_some() {
            "not run: op_types declares keys are never forgotten (key_retention_s is NULL)"
                .to_string()
        } else {
            "not run: no declared key_retention_s for this op type (give --ledger LEDGER \
             with its op_types row)"
                .to_string()
        });
    };
    let needed = Duration::from_secs(retention.max(0) as u64) + MARGIN;
    if spec.id == "expiry_retry" && needed > s.max_wait {
        return Some(format!(
            "not run: retention {retention} s exceeds --max-wait"
        ));
    }
    if spec.id == "observed_retention" && !has_lookup {
        return Some(
            "not run: receiver declares no lookup to ask whether a key is remembered".into(),
        );
    }
    None
}

/// Runs `expiry_retry` or `observed_retention`; `None` when stopped.
pub fn run(t: &Target, spec: &Spec, s: &Settings) -> Option<CaseRecord> {
    let retention_s = s.declared.key_retention_s?;
    let declared = Duration::from_secs(retention_s.max(0) as u64);
    let params = &s.params;
    let mut c = CaseRun::new(t, spec, params, 2);
    let key = c.key(1);
    // Taken before the call: the key cannot have been remembered longer
    // than since then, so a sound receiver is never measured short.
    let committed = Instant::now();
    c.attempt(&key, params, None, None);
    let expected = match spec.id {
        "expiry_retry" => {
            if !wait(declared + MARGIN, t.stop) {
                return None;
            }
            c.attempt(&key, params, None, None);
            c.rec.hazard = Some(format!(
                "a same-key retry {} s after the effect, past the declared retention of \
                 {retention_s} s, may make a second effect",
                (declared + MARGIN).as_secs()
            ));
            vec![
                ("effect_count", json!(2)),
                ("caller_result", json!("success")),
            ]
        }
        "observed_retention" => {
            let subject = t.subject(&c.rec.account, &key, params);
            let limit = (declared + MARGIN).min(s.max_wait);
            let forgotten = watch(t, &subject, committed, limit)?;
            let observed = forgotten.map(|d| d.as_secs_f64());
            let unproven = forgotten.is_none() && limit < declared + MARGIN;
            c.rec
                .observed
                .insert("observed_retention_s".into(), json!(observed.map(round_ms)));
            c.rec
                .observed
                .insert("declared_retention_s".into(), json!(retention_s));
            let early = observed.is_some_and(|o| o + SLACK_S < retention_s as f64);
            // Still remembered when the wait ran out, short of the declared
            // retention: nothing is proven either way.
            let as_declared = if unproven { None } else { Some(!early) };
            c.rec
                .observed
                .insert("remembered_as_declared".into(), json!(as_declared));
            if unproven {
                c.rec.observed.insert(
                    "remembered_at_least_s".into(),
                    json!(round_ms(limit.as_secs_f64())),
                );
            }
            if early {
                // Within the declared retention a same-key retry must
                // replay; a receiver that forgot makes a second effect.
                c.attempt(&key, params, None, None);
                c.rec.notes.push(format!(
                    "the key was forgotten after {:.1} s of a declared {retention_s} s; a retry \
                     within the declared retention was carried out again",
                    observed.unwrap_or_default()
                ));
            }
            vec![
                ("remembered_as_declared", json!(true)),
                ("effect_count", json!(1)),
            ]
        }
        _ => return None,
    };
    Some(c.finish(&expected))
}

/// Asks by lookup until the key is no longer found, at most `limit` after
/// `since`: how long it was remembered, or `None` when it still is.
/// `None` of the outer option: stopped.
fn watch(
    t: &Target,
    subject: &crate::receivers::Subject,
    since: Instant,
    limit: Duration,
) -> Option<Option<Duration>> {
    loop {
        if !matches!(t.lookup(subject), LookupOutcome::Found { .. }) {
            return Some(Some(since.elapsed()));
        }
        if since.elapsed() >= limit {
            return Some(None);
        }
        if !wait(POLL, t.stop) {
            return None;
        }
    }
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}
