//! The receiver a drill runs against, and one call of each of its actions:
//! a `retry` with a fault and the caller's own limit, a `lookup`, the
//! `effects` listing. Each call is a child process in its own process
//! group ([`crate::receivers::run_with`]), killed at its limit and by
//! Ctrl-C.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use serde_json::Value;

use super::record::Attempt;
use crate::domain::OperationId;
use crate::receivers::{
    Exit, LookupOutcome, Receiver, RetryOutcome, Subject, lookup_outcome, retry_outcome, run_with,
};

/// The op type's receiver, and what every case shares.
pub struct Target<'a> {
    pub receiver: &'a Receiver,
    pub op_type: String,
    /// The run's id: every case's account is `drill-<run>-<case>`.
    pub run_id: String,
    /// Set by Ctrl-C: no new call starts.
    pub stop: &'a AtomicBool,
}

/// How one retry call went, for the case to reason on.
pub struct Called {
    pub attempt: Attempt,
    /// The caller killed it (its own limit, or the crash it plays).
    pub killed: bool,
}

impl Target<'_> {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The `SETTLE_*` of a call about `key` under `account`.
    pub fn subject(&self, account: &str, key: &str, params: &Value) -> Subject {
        Subject {
            op_id: OperationId(0),
            account: account.to_string(),
            op_type: self.op_type.clone(),
            key: key.to_string(),
            fingerprint: crate::drill::fingerprint(params),
            params: Some(params.to_string()),
        }
    }

    /// One `retry` as attempt `n`, with `fault` in `SETTLE_DRILL_FAULT`,
    /// killed by the caller at `limit` when given.
    pub fn retry(
        &self,
        n: i64,
        subject: &Subject,
        fault: Option<&str>,
        limit: Option<Duration>,
    ) -> Called {
        let started_at = Utc::now();
        let env: Vec<(&str, String)> = fault
            .map(|f| vec![("SETTLE_DRILL_FAULT", f.to_string())])
            .unwrap_or_default();
        let ran = self
            .receiver
            .retry
            .as_ref()
            .map(|action| run_with(action, subject, Some(n), &env, limit));
        let ended_at = Utc::now();
        let (result, result_id, exit, said, killed) = match &ran {
            None => (
                "error",
                None,
                "no retry configured".to_string(),
                None,
                false,
            ),
            Some(ran) => {
                let said = ran
                    .stderr
                    .text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| crate::text::sanitize(&crate::text::fit(l.trim(), 160)).into_owned());
                let killed = matches!(ran.exit, Exit::TimedOut(_));
                let (result, id) = match retry_outcome(ran) {
                    RetryOutcome::Completed { result_id } => ("success", Some(result_id)),
                    RetryOutcome::Refused => ("conflict", None),
                    RetryOutcome::Failed { .. } if killed => ("timeout", None),
                    RetryOutcome::Failed { .. } => ("error", None),
                };
                (result, id, ran.exit.to_string(), said, killed)
            }
        };
        Called {
            attempt: Attempt {
                attempt: n,
                caller: None,
                key: subject.key.clone(),
                params: subject
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str(p).ok())
                    .unwrap_or(Value::Null),
                fault: fault.map(contract_word),
                result,
                result_id,
                exit,
                said,
                started_at,
                ended_at,
            },
            killed,
        }
    }

    /// The receiver's `lookup` of `subject`'s key; unknown without one.
    pub fn lookup(&self, subject: &Subject) -> LookupOutcome {
        match &self.receiver.lookup {
            Some(action) => lookup_outcome(&run_with(action, subject, None, &[], None)),
            None => LookupOutcome::Unknown {
                why: "no lookup configured".to_string(),
            },
        }
    }

    /// The ids `effects` prints for `account`; `Err` says why there are
    /// none to trust (no `effects`, or it failed).
    pub fn effects(&self, account: &str) -> Result<Vec<String>, String> {
        let Some(action) = &self.receiver.effects else {
            return Err("the receiver declares no `effects` command".to_string());
        };
        let subject = self.subject(account, "", &Value::Null);
        let ran = run_with(action, &subject, None, &[], None);
        match ran.exit {
            Exit::Code(0) if !ran.stdout.cut => Ok(ran
                .stdout
                .text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| crate::text::sanitize(l).into_owned())
                .collect()),
            Exit::Code(0) => Err("`effects` printed more than settle keeps".to_string()),
            exit => Err(format!("`effects` failed: {exit}")),
        }
    }
}

/// The fault as `retry-drill/1` names it: the reference drill's
/// `after_commit` is this contract's `after_effect`.
fn contract_word(fault: &str) -> String {
    match fault {
        "after_effect" => "after_commit".to_string(),
        other => other.to_string(),
    }
}

/// Sleeps `d` in short slices, returning early (false) once `stop` is set.
pub fn wait(d: Duration, stop: &AtomicBool) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
