//! `settle drill run`: drills an op type's receiver ([`crate::drill::run`])
//! with progress on stderr, writes the results folder, prints a line per
//! case and the verdict, and records the verdict in the ledger when one is
//! given. Ctrl-C kills every running call's process group and writes what
//! finished.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::output::emit;
use super::progress::Steps;
use crate::cli::DrillRunArgs;
use crate::cli::config::Config;
use crate::drill::drilling;
use crate::drill::run::{self as drill_run, CaseRecord, Declared, Progress, Run, Settings, Spec};
use crate::error::{Error, Result};
use crate::receivers::Receivers;
use crate::text::sanitize;

/// How long recording the verdict waits for another writer's lock.
const WAIT: Duration = Duration::from_secs(5);

pub fn run(args: &DrillRunArgs, config: &Config) -> Result<()> {
    let receivers = Receivers::load(&args.receivers)?;
    let params = params(args.params.as_deref())?;
    let cases = cases(&args.cases)?;
    let mut ledger = None;
    let mut declared = Declared::default();
    let mut operator = String::new();
    if let Some(path) = &args.ledger {
        operator = config
            .operator
            .clone()
            .map_err(|why| Error::Usage(format!("who is drilling? {why}")))?;
        let opened = super::ledger_arg::open_for_writing(path, WAIT)?;
        declared = drilling::declared(&opened, &receivers, &args.op_type)?;
        ledger = Some(opened);
    }
    let settings = Settings {
        op_type: args.op_type.clone(),
        params,
        cases,
        concurrency: usize::from(args.concurrency),
        max_wait: Duration::from_secs(args.max_wait),
        declared,
    };
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_interrupt(&stop);
    let steps = Steps::every("drilling", settings.cases.len() as u64);
    let mut done = 0;
    let drilled = drill_run::run(&receivers, &settings, &stop, |p| {
        report(&steps, &mut done, p)
    })?;
    steps.finish();
    let file = drilled.write(&args.out, &settings)?;
    // An interrupted run proved less than it set out to: it is written,
    // never recorded as the op type's verdict.
    let recorded = match &mut ledger {
        Some(ledger) if !drilled.interrupted => {
            Some(drilling::record(ledger, &drilled, &file, &operator)?)
        }
        _ => None,
    };
    print_verdict(&drilled, &file, recorded)?;
    if drilled.interrupted {
        eprintln!(
            "settle: interrupted: the {} case(s) that finished are written",
            drilled.cases.len()
        );
        std::process::exit(130);
    }
    Ok(())
}

/// `--params`, or `{"drill": true}`; it must be a JSON value.
fn params(text: Option<&str>) -> Result<Value> {
    match text {
        None => Ok(drilling::default_params()),
        Some(t) => serde_json::from_str(t).map_err(|e| {
            Error::Usage(format!(
                "--params is not JSON ({e}): give the params every case sends, e.g. \
                 --params '{{\"amount\": 5}}'"
            ))
        }),
    }
}

/// `--cases`, or every case; an unknown name lists the known ones.
fn cases(names: &[String]) -> Result<Vec<&'static Spec>> {
    if names.is_empty() {
        return Ok(drill_run::CASES.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            drill_run::spec::find(name.trim()).ok_or_else(|| {
                Error::Usage(format!(
                    "--cases: no case {:?}; the cases are {}",
                    sanitize(name),
                    drill_run::CASES.map(|c| c.id).join(", ")
                ))
            })
        })
        .collect()
}

/// Ctrl-C (or TERM) stops the run: every call running is killed with its
/// process group, which the terminal's signal never reaches, and the cases
/// that finished are written. A second one exits at once.
fn stop_on_interrupt(stop: &Arc<AtomicBool>) {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if stop.swap(true, Ordering::SeqCst) {
                crate::receivers::kill_running();
                std::process::exit(128 + signal);
            }
            crate::receivers::kill_running();
        }
    });
}

fn report(steps: &Steps, done: &mut u64, p: Progress) {
    match p {
        Progress::Started { index, total, spec } => steps.at(index as u64, spec.id, || {
            format!("settle: drill: {} ({}/{total})", spec.id, index + 1)
        }),
        Progress::Done { record, .. } => {
            *done += 1;
            steps.inc();
            steps.suspend(|| println!("{}", case_line(record)));
        }
        Progress::Skipped { spec, why } => {
            steps.inc();
            steps.suspend(|| println!("skip  {:<20} {}", spec.id, sanitize(why)));
        }
    }
}

/// One line per case: met or not, the effect count and how it is known,
/// the time, what was expected.
fn case_line(c: &CaseRecord) -> String {
    let mark = match c.passed() {
        Some(true) => "ok  ",
        Some(false) => "FAIL",
        None => "?   ",
    };
    let count = match c.effect_count {
        Some((n, from)) => format!("{n} effect(s) ({from})"),
        None => "effects unknown".to_string(),
    };
    let hazard = c
        .hazard
        .as_deref()
        .map(|h| format!("; hazard: {h}"))
        .unwrap_or_default();
    sanitize(&format!(
        "{mark}  {:<20} {count}, {:.1} s; expected {}{hazard}",
        c.case,
        c.elapsed_ms as f64 / 1000.0,
        c.expectation
    ))
    .into_owned()
}

fn print_verdict(run: &Run, file: &std::path::Path, recorded: Option<i64>) -> Result<()> {
    let v = &run.verdict;
    emit(|out| {
        writeln!(out, "verdict: {}", sanitize(&v.summary()))?;
        for (name, check) in [
            ("honours keys under concurrency", &v.concurrency),
            ("refuses changed params", &v.changed_params),
            ("replays the same result id", &v.same_result_id),
            ("retention as declared", &v.retention),
        ] {
            writeln!(out, "  {name:<32} {}", sanitize(&check_text(check)))?;
        }
        writeln!(out, "results: {}", file.display())?;
        if let Some(id) = recorded {
            writeln!(out, "recorded in the ledger as drill verdict {id}")?;
        }
        Ok(())
    })
}

fn check_text(c: &drill_run::Check) -> String {
    match c {
        drill_run::Check::Yes => "yes".to_string(),
        drill_run::Check::No(why) => format!("NO: {why}"),
        drill_run::Check::NotRun(why) => format!("not run ({why})"),
        drill_run::Check::Unknown(why) => format!("unknown ({why})"),
    }
}
