//! `settle worker`: drains `retry_requests` (ledger-v1), so a same-key retry
//! an operator queued is run by the receiver without the operator waiting.
//! Up to `--concurrency` threads, each with its own ledger connection,
//! claim a request, run the receiver's `retry` under the same key and
//! record how it ended; the store judges the rules and keeps two workers
//! off one request. One line per request finished goes to stdout from the
//! main thread. SIGTERM or SIGINT stops claiming: the retries running
//! finish and are recorded, then it exits 0 (a second signal exits at
//! once). It never speaks SQL.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use chrono::Utc;
use signal_hook::consts::signal::{SIGINT, SIGTERM};

use super::output::emit;
use crate::cli::WorkerArgs;
use crate::cli::config::Config;
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryEnd, RetryFinished, RetryRun};
use crate::error::{Error, Result};
use crate::receivers::{self, Exit, Receivers, RetryOutcome, Subject};
use crate::store::{Access, Ledger};
use crate::text::sanitize;

/// How often an idle worker looks for work: a new request shows up as a
/// changed `data_version` within this, and a lapsed claim (which changes
/// nothing in the file) is found at the next full look.
const IDLE_PEEK: Duration = Duration::from_millis(100);
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// What a worker thread tells the main thread.
enum Report {
    Line(String),
    Failed(Error),
}

pub fn run(args: &WorkerArgs, config: &Config) -> Result<()> {
    let receivers = Receivers::load_configured(config.receivers.as_deref())?;
    if receivers.source.is_none() {
        return Err(Error::Usage(
            "no receivers file: the worker runs each op type's `retry` from it; \
             give --receivers FILE, or write settle/receivers.toml under $XDG_CONFIG_HOME"
                .to_string(),
        ));
    }
    if args.concurrency == 0 {
        return Err(Error::Usage("--concurrency must be at least 1".to_string()));
    }
    // The main thread's open adopts or migrates the ledger once, before the
    // threads open theirs.
    let wait = crate::store::BUSY_TIMEOUT;
    drop(super::ledger_arg::open_for_writing(&args.ledger, wait)?);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGTERM, SIGINT] {
        // The first signal stops claiming; a second one, while retries
        // still run, exits at once (status 1): their claims lapse and
        // another worker replays them under the same key.
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .map_err(|source| Error::Io {
                path: args.ledger.clone(),
                doing: "catching SIGTERM and SIGINT".to_string(),
                source,
            })?;
    }
    let worker = Worker {
        ledger: &args.ledger,
        name: args.name.clone().unwrap_or_else(default_name),
        lease: Duration::from_secs(args.lease_s),
        once: args.once,
        receivers: &receivers,
        stop: &stop,
    };
    let (tx, rx) = mpsc::channel();
    let mut first_error = None;
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency {
            let tx = tx.clone();
            let worker = &worker;
            scope.spawn(move || worker.drain(&tx));
        }
        drop(tx);
        for report in rx {
            match report {
                Report::Line(line) => {
                    // A closed stdout stops nothing: the ledger is the record.
                    let _ = emit(|out| writeln!(out, "{line}"));
                }
                Report::Failed(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    first_error.map_or(Ok(()), Err)
}

/// What every worker thread shares.
struct Worker<'a> {
    ledger: &'a Path,
    name: String,
    lease: Duration,
    once: bool,
    receivers: &'a Receivers,
    stop: &'a AtomicBool,
}

impl Worker<'_> {
    /// One thread's loop: claim, run, finish, until stopped (or, with
    /// `--once`, until nothing is claimable).
    fn drain(&self, tx: &Sender<Report>) {
        if let Err(e) = self.drain_or_fail(tx) {
            let _ = tx.send(Report::Failed(e));
        }
    }

    fn drain_or_fail(&self, tx: &Sender<Report>) -> Result<()> {
        let (mut ledger, _) = Ledger::open_waiting(
            self.ledger,
            Access::ReadWrite,
            crate::store::BUSY_TIMEOUT,
            &mut |_| {},
        )?;
        // A claim judges the rules again: on the same contract `settle
        // decide` judged, the file's declarations included.
        ledger.declare(self.receivers.declarations().clone());
        let mut backoff = Duration::ZERO;
        while !self.stopping() {
            let claimed = match ledger.claim_retry(&self.name, self.lease, Utc::now()) {
                // Another writer held the lock past the busy timeout: the
                // requests are still there, so look again rather than
                // take "busy" for "nothing to do" (--once would exit).
                Err(Error::Busy { .. }) => continue,
                Err(e) if !self.once && transient(&e) => {
                    self.pause(&e, &mut backoff, tx);
                    continue;
                }
                other => other?,
            };
            backoff = Duration::ZERO;
            let line = match claimed {
                None if self.once => return Ok(()),
                None => {
                    if let Err(e) = self.idle(&ledger) {
                        if !transient(&e) {
                            return Err(e);
                        }
                        self.pause(&e, &mut backoff, tx);
                    }
                    continue;
                }
                Some(Claimed::Refused(refused)) => finished_line(&refused, None),
                Some(Claimed::Run(claim)) => self.run_one(&mut ledger, &claim)?,
            };
            if tx.send(Report::Line(line)).is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// A long-running worker outlives a database restart: it says what
    /// happened, waits (1 s, doubling to 30 s, cut short by a stop), and
    /// the store reconnects on the next call. Claims it held lapse and are
    /// replayed under the same key.
    fn pause(&self, e: &Error, backoff: &mut Duration, tx: &Sender<Report>) {
        *backoff = (*backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
        let _ = tx.send(Report::Line(format!(
            "{}; trying again in {} s",
            sanitize(&e.to_string()).lines().next().unwrap_or_default(),
            backoff.as_secs()
        )));
        let until = Instant::now() + *backoff;
        while Instant::now() < until && !self.stopping() {
            std::thread::sleep(IDLE_PEEK);
        }
    }

    /// Waits for something to do: a commit by another connection, or the
    /// next full look, whichever comes first; returns early when stopped.
    fn idle(&self, ledger: &Ledger) -> Result<()> {
        let seen = ledger.data_version()?;
        let until = Instant::now() + IDLE_LOOK;
        while Instant::now() < until && !self.stopping() {
            std::thread::sleep(IDLE_PEEK);
            if ledger.data_version()? != seen {
                break;
            }
        }
        Ok(())
    }

    /// Runs the claimed retry and records it. A ledger busy past its wait
    /// is tried again while the claim lasts: the receiver has already run.
    fn run_one(&self, ledger: &mut Ledger, claim: &RetryClaim) -> Result<String> {
        let subject = Subject::from(&claim.operation);
        let started_at = Utc::now();
        let retry = receivers::retry(self.receivers, &subject, claim.attempt);
        let ended_at = Utc::now();
        let timed_out = matches!(retry.ran.as_ref().map(|r| &r.exit), Some(Exit::TimedOut(_)));
        let run = RetryRun {
            end: match retry.outcome {
                RetryOutcome::Completed { result_id } => RetryEnd::Completed { result_id },
                RetryOutcome::Refused => RetryEnd::Refused,
                RetryOutcome::Failed { why } => RetryEnd::Failed { why, timed_out },
            },
            started_at,
            ended_at,
            command: retry.ran.as_ref().map(|r| r.command.clone()),
            exit: retry
                .ran
                .as_ref()
                .map_or_else(|| "not configured".to_string(), |r| r.exit.to_string()),
        };
        let took = (ended_at - started_at).to_std().unwrap_or_default();
        let give_up = Instant::now() + self.lease;
        loop {
            match ledger.finish_retry(claim, &run, Utc::now()) {
                Ok(Finish::Recorded(done)) => return Ok(finished_line(&done, Some((&run, took)))),
                Ok(Finish::Lost { request_id, held }) => {
                    return Ok(format!(
                        "request {request_id} operation {}: not recorded: the claim lapsed and the request is {} now (its run is a replay under the same key)",
                        claim.operation.id,
                        sanitize(&held)
                    ));
                }
                Err(Error::Busy { .. }) if Instant::now() < give_up => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// One line per request finished, e.g. `request 12 operation 7: done,
/// completed report-8812 (attempt 2, exit 0, 0.3 s)`. The outcome came
/// from a receiver or the ledger: sanitised.
fn finished_line(f: &RetryFinished, ran: Option<(&RetryRun, Duration)>) -> String {
    let moved = match &f.to_state {
        Some(state) => format!("operation -> {state}"),
        None => "operation left as it is".to_string(),
    };
    let how = match (f.attempt, ran) {
        (Some(attempt), Some((run, took))) => format!(
            " (attempt {attempt}, {}, {:.1} s)",
            sanitize(&run.exit),
            took.as_secs_f64()
        ),
        _ => " (not run)".to_string(),
    };
    format!(
        "request {} operation {}: {}, {moved}: {}{how}",
        f.request_id,
        f.op_id,
        f.status,
        sanitize(&f.outcome)
    )
}

/// Errors a database restart, a dropped connection or another writer's
/// lock gives, which the next call may not: worth waiting out in a
/// long-running worker ([`Error::is_transient`]).
fn transient(e: &Error) -> bool {
    e.is_transient()
}

/// `host:pid`, so a claim names the machine and process that holds it.
fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_string());
    format!("{host}:{}", std::process::id())
}
