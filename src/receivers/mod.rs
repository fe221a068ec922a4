//! Asking a receiver about an operation and re-sending it: the receivers
//! file, and running its `lookup` and `retry` actions as child processes,
//! because only the receiver knows whether a key's effect exists. It turns
//! a child's exit and output into domain outcomes; it never opens a ledger
//! or writes one: the probe and the worker record what it reports.
//!
//! The API, for the probe (`p`, `settle probe`) and `settle worker`:
//!
//! - [`Receivers::load_configured`]`(config.receivers.as_deref())` reads the
//!   file [`crate::cli::config::Config`] resolved (`--receivers FILE`, else
//!   `settle/receivers.toml` under the config home), or none.
//! - [`lookup`]`(&receivers, &subject) -> `[`Lookup`]: [`LookupOutcome`]
//!   (`Found { result_id }`, `NotFound`, `Unknown { why }`) plus the
//!   [`Ran`] record (command, [`Exit`], duration, captured output) to store.
//! - [`retry`]`(&receivers, &subject, attempt) -> `[`Retry`]: [`RetryOutcome`]
//!   (`Completed { result_id }`, `Refused`, `Failed { why }`) plus [`Ran`].
//! - [`lookup_all`] runs many lookups, at most `receivers.concurrency` at
//!   once, calling back on the caller's thread as each one finishes; the
//!   callback may stop it. Run it on a worker thread in the console.
//! - A [`Subject`] is built from an
//!   [`Operation`](crate::domain::Operation) (`Subject::from(&op)`).
//!
//! The contract a receiver's commands follow: `lookup` exits 0 and prints the
//! result id on its first line when the effect exists, exits 3 when the
//! receiver has no record of the key; anything else (another status, a
//! signal, the timeout, no lookup configured) is unknown. `retry` exits 0
//! with the result id when done (a replay counts), 3 when the receiver
//! refuses it as a conflict; anything else is a failed attempt. Output is
//! untrusted: the result id is sanitised and bounded here, the rest must be
//! sanitised by whoever shows it.

mod config;
pub(crate) mod probing;
mod run;
mod subject;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

pub use config::{
    Action, DEFAULT_CONCURRENCY, DEFAULT_ENTRY, DEFAULT_TIMEOUT, Receiver, Receivers,
};
pub use run::{Captured, Exit, OUTPUT_CAP, Ran, kill_running, run, run_with};
pub use subject::Subject;

/// The exit status by which a receiver says "no record of this key" (to a
/// lookup) or "refused: a conflict" (to a retry).
pub const EXIT_NO: i32 = 3;

/// Longest result id accepted, in bytes. A longer first line is not cut
/// into an id that would pass for the real one: the outcome is unknown.
pub const MAX_RESULT_ID: usize = 200;

/// What a lookup says about the effect of an operation's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupOutcome {
    /// The receiver has the effect; `result_id` is sanitised.
    Found { result_id: String },
    /// The receiver states it has no record of the key.
    NotFound,
    /// Nothing can be concluded; `why` is sanitised, one line.
    Unknown { why: String },
}

/// A lookup's outcome and what ran (`None`: nothing was configured to run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub outcome: LookupOutcome,
    pub ran: Option<Ran>,
}

/// What a same-key retry came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryOutcome {
    /// Done (or replayed); `result_id` is sanitised.
    Completed { result_id: String },
    /// The receiver refused it as a conflict (exit 3).
    Refused,
    /// The attempt failed; `why` is sanitised, one line.
    Failed { why: String },
}

/// A retry's outcome and what ran (`None`: nothing was configured to run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    pub outcome: RetryOutcome,
    pub ran: Option<Ran>,
}

/// Runs the lookup configured for `subject`'s op type.
pub fn lookup(receivers: &Receivers, subject: &Subject) -> Lookup {
    let action = receivers
        .receiver(&subject.op_type)
        .and_then(|r| r.lookup.as_ref());
    let Some(action) = action else {
        let why = receivers.missing(&subject.op_type, "lookup");
        return Lookup {
            outcome: LookupOutcome::Unknown {
                why: one_line(&why),
            },
            ran: None,
        };
    };
    let ran = run(action, subject, None);
    let outcome = lookup_outcome(&ran);
    Lookup {
        outcome,
        ran: Some(ran),
    }
}

/// Runs the retry configured for `subject`'s op type as attempt `attempt`
/// (`SETTLE_ATTEMPT`).
pub fn retry(receivers: &Receivers, subject: &Subject, attempt: i64) -> Retry {
    let action = receivers
        .receiver(&subject.op_type)
        .and_then(|r| r.retry.as_ref());
    let Some(action) = action else {
        let why = receivers.missing(&subject.op_type, "retry");
        return Retry {
            outcome: RetryOutcome::Failed {
                why: one_line(&why),
            },
            ran: None,
        };
    };
    let ran = run(action, subject, Some(attempt));
    let outcome = retry_outcome(&ran);
    Retry {
        outcome,
        ran: Some(ran),
    }
}

/// Runs the lookups of `subjects`, at most `receivers.concurrency` at once,
/// and calls `on_done` with each one's index in `subjects` and its
/// [`Lookup`] as it finishes (in finishing order, on the caller's thread).
/// When `on_done` returns `Break`, no further lookup starts; those running
/// finish and are still reported. Returns when every started one has.
pub fn lookup_all(
    receivers: &Receivers,
    subjects: &[Subject],
    mut on_done: impl FnMut(usize, Lookup) -> ControlFlow<()>,
) {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    let workers = receivers.concurrency.clamp(1, subjects.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(subject) = subjects.get(i) else {
                        break;
                    };
                    if tx.send((i, lookup(receivers, subject))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, done) in rx {
            if on_done(i, done).is_break() {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
}

/// The contract's three answers, shared by lookup and retry.
enum Verdict {
    Yes(String),
    No,
    Neither(String),
}

/// What a retry's run means under the contract (for a drill, which runs
/// the retry itself to inject faults).
pub fn retry_outcome(ran: &Ran) -> RetryOutcome {
    match judge(ran) {
        Verdict::Yes(result_id) => RetryOutcome::Completed { result_id },
        Verdict::No => RetryOutcome::Refused,
        Verdict::Neither(why) => RetryOutcome::Failed { why },
    }
}

/// What a lookup's run means under the contract.
pub fn lookup_outcome(ran: &Ran) -> LookupOutcome {
    match judge(ran) {
        Verdict::Yes(result_id) => LookupOutcome::Found { result_id },
        Verdict::No => LookupOutcome::NotFound,
        Verdict::Neither(why) => LookupOutcome::Unknown { why },
    }
}

fn judge(ran: &Ran) -> Verdict {
    match &ran.exit {
        Exit::Code(0) => match result_id(&ran.stdout.text) {
            Ok(id) => Verdict::Yes(id),
            Err(why) => Verdict::Neither(why),
        },
        Exit::Code(EXIT_NO) => Verdict::No,
        exit => {
            let said = ran
                .stderr
                .text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!(": {}", crate::text::fit(l.trim(), 160)))
                .unwrap_or_default();
            Verdict::Neither(one_line(&format!("{exit}{said}")))
        }
    }
}

/// The result id on the first line of `stdout`: trimmed, sanitised, and
/// refused when empty or longer than [`MAX_RESULT_ID`].
fn result_id(stdout: &str) -> Result<String, String> {
    let first = stdout.lines().next().unwrap_or("").trim();
    if first.is_empty() {
        return Err("exit 0 but no result id on the first line of stdout".to_string());
    }
    if first.len() > MAX_RESULT_ID {
        return Err(format!(
            "exit 0 but the result id is {} bytes long (at most {MAX_RESULT_ID})",
            first.len()
        ));
    }
    Ok(crate::text::sanitize(first).into_owned())
}

fn one_line(s: &str) -> String {
    crate::text::sanitize(s).into_owned()
}

#[cfg(test)]
mod tests;
