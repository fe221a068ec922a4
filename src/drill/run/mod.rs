//! `settle drill run`: drills an op type's real receiver at the failure
//! boundaries (concurrency, timeouts, crashes, lost responses, changed
//! params, key expiry) and writes what it proved as `retry-drill/1`, which
//! every reader of drills reads, with a verdict per op type. Unlike the
//! rest of [`crate::drill`] it runs processes and reads the clock: each
//! call is a child in its own process group, killed at its limit, and
//! Ctrl-C ([`Run::stop`]) kills every running call and keeps what finished.

mod case;
mod cases;
mod record;
pub(crate) mod settings;
pub(crate) mod spec;
mod target;
mod timed;
pub(crate) mod verdict;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

pub use record::CaseRecord;
pub use settings::{DEFAULT_CONCURRENCY, DEFAULT_MAX_WAIT, Declared, Settings};
pub use spec::{CASES, Needs, Spec};
pub use verdict::{Check, OpVerdict};

use crate::error::{Error, Result};
use crate::receivers::{Receiver, Receivers};

/// What the run tells its caller as it goes.
pub enum Progress<'a> {
    /// Case `index` (0-based) of `total` starts.
    Started {
        index: usize,
        total: usize,
        spec: &'a Spec,
    },
    /// It ended; `None` of `passed`: its expectation could not be checked.
    Done { record: &'a CaseRecord },
    /// It cannot run against this receiver (why).
    Skipped { spec: &'a Spec, why: &'a str },
}

/// A finished (or interrupted) run.
pub struct Run {
    pub run_id: String,
    pub started_at: DateTime<Utc>,
    pub cases: Vec<CaseRecord>,
    /// Cases that did not run, with the reason ("not run: …").
    pub not_run: Vec<(&'static str, String)>,
    pub interrupted: bool,
    pub verdict: OpVerdict,
    pub receivers_file: Option<PathBuf>,
}

/// Runs `settings.cases` against `settings.op_type`'s receiver in
/// `receivers`, one case after another, telling `progress` as they go.
/// Setting `stop` (Ctrl-C) ends it after the calls running now are killed.
pub fn run(
    receivers: &Receivers,
    settings: &Settings,
    stop: &AtomicBool,
    mut progress: impl FnMut(Progress),
) -> Result<Run> {
    let op_type = &settings.op_type;
    let receiver = drillable(receivers, op_type)?;
    let started_at = Utc::now();
    let run_id = started_at.format("%Y%m%dT%H%M%S%3f").to_string();
    let target = target::Target {
        receiver,
        op_type: op_type.clone(),
        run_id: run_id.clone(),
        stop,
    };
    let mut cases = Vec::new();
    let mut not_run = Vec::new();
    let total = settings.cases.len();
    for (index, spec) in settings.cases.iter().copied().enumerate() {
        if target.stopped() {
            break;
        }
        if let Some(why) = cannot_run(spec, settings, receiver) {
            progress(Progress::Skipped { spec, why: &why });
            not_run.push((spec.id, why));
            continue;
        }
        progress(Progress::Started { index, total, spec });
        let record = match spec.needs {
            Needs::Retention | Needs::LookupRetention => timed::run(&target, spec, settings),
            _ => cases::run(&target, spec, settings),
        };
        let Some(record) = record else { break };
        progress(Progress::Done { record: &record });
        cases.push(record);
    }
    let verdict = verdict::judge(op_type, &cases, &settings.declared);
    Ok(Run {
        run_id,
        started_at,
        interrupted: target.stopped(),
        cases,
        not_run,
        verdict,
        receivers_file: receivers.source.clone(),
    })
}

/// The receiver of `op_type`, refused when there is none or it declares
/// no retry: a drill plays its cases through the retry.
pub fn drillable<'r>(receivers: &'r Receivers, op_type: &str) -> Result<&'r Receiver> {
    let file = receivers
        .source
        .as_deref()
        .map_or("no receivers file".into(), |p| p.display().to_string());
    let receiver = receivers.receiver(op_type).ok_or_else(|| {
        Error::Usage(format!(
            "{file}: no receiver for op type {op_type} (nor under [receivers.\"*\"]); add \
             [receivers.{op_type}] with a retry"
        ))
    })?;
    if receiver.retry.is_none() {
        return Err(Error::Usage(format!(
            "{file}: the receiver of op type {op_type} declares no retry, so nothing of it can \
             be drilled: a drill calls the retry"
        )));
    }
    Ok(receiver)
}

/// Why `spec` cannot run here, as the results list it.
fn cannot_run(spec: &Spec, settings: &Settings, receiver: &Receiver) -> Option<String> {
    match spec.needs {
        Needs::NoKey => Some(
            "not run: the receivers contract always sends a key (SETTLE_KEY); \
             changed_key plays the keyless caller"
                .into(),
        ),
        Needs::Faults if !receiver.faults => {
            Some("not run: receiver declares no fault injection".into())
        }
        Needs::Retention | Needs::LookupRetention => {
            timed::not_run(spec, settings, receiver.lookup.is_some())
        }
        _ => None,
    }
}

impl Run {
    /// The results as `retry-drill/1`.
    pub fn to_json(&self, settings: &Settings) -> Value {
        let passed = self.cases.iter().all(|c| c.passed() == Some(true));
        json!({
            "format": crate::drill::FORMAT,
            "generated_at": record::stamp(self.started_at),
            "producer": format!("settle {} drill run", env!("CARGO_PKG_VERSION")),
            "passed": passed,
            "run": self.run_id,
            "against_receiver": {
                "op_type": settings.op_type,
                "receivers_file": self.receivers_file.as_ref().map(|p| p.display().to_string()),
                "declared": {
                    "idempotent": settings.declared.idempotent,
                    "key_retention_s": settings.declared.key_retention_s,
                },
                "concurrency": settings.concurrency,
                "max_wait_s": settings.max_wait.as_secs_f64(),
            },
            "interrupted": self.interrupted,
            "not_run": self.not_run.iter().map(|(case, why)| json!({ "case": case, "why": why })).collect::<Vec<_>>(),
            "verdict": self.verdict.to_json(),
            "cases": self.cases.iter().map(CaseRecord::to_json).collect::<Vec<_>>(),
        })
    }

    /// Writes `DIR/drill-<stamp>/drill-results.json` (a new folder, never
    /// one that exists) and returns the file's path.
    pub fn write(&self, out: &Path, settings: &Settings) -> Result<PathBuf> {
        let io = |path: &Path, doing: &str, source| Error::Io {
            path: path.to_path_buf(),
            doing: doing.to_string(),
            source,
        };
        std::fs::create_dir_all(out).map_err(|e| io(out, "creating the output folder", e))?;
        let dir = out.join(format!("drill-{}", self.run_id));
        std::fs::create_dir(&dir).map_err(|e| io(&dir, "creating the run's folder", e))?;
        let file = dir.join("drill-results.json");
        let text = serde_json::to_string_pretty(&self.to_json(settings))
            .map_err(|e| io(&file, "writing drill results", std::io::Error::other(e)))?;
        std::fs::write(&file, text + "\n").map_err(|e| io(&file, "writing drill results", e))?;
        Ok(file)
    }
}
