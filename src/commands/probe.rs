//! `settle probe`: asks the receivers whether the named operations' effects
//! exist (or those of the queue rows a filter matches, with `--limit` or
//! `--all` saying how many may be asked), records each answer as a probe
//! through [`crate::receivers::probing`], and prints a line per operation as its
//! lookup ends. Lookup output is untrusted: every printed text is
//! sanitised. Exit 6 when any answer is unknown (see `--help`).

use super::progress::Steps;
use std::ops::ControlFlow;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::output::{emit_json, emit_page};
use crate::cli::config::Config;
use crate::cli::{ProbeArgs, ProbeFormat};
use crate::domain::{Operation, OperationId};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::receivers::LookupOutcome;
use crate::receivers::probing::{self, Probed};
use crate::store::Ledger;
use crate::text::{json_safe, pad, sanitize};

/// Most columns of the key in the table: a longer key is cut, saying so
/// with `…`.
const KEY_WIDTH: usize = 40;

pub fn run(args: &ProbeArgs, config: &Config, now: DateTime<Utc>) -> Result<()> {
    let operator = config
        .operator
        .clone()
        .map_err(|why| Error::Usage(format!("who is probing? {why}")))?;
    let (member, specs) = super::ledger_arg::one_ledger_for(&args.set, &args.ops)?;
    member.writable()?;
    let receivers = probing::receivers_for_probing(config.receivers.as_deref())?;
    // A probe is recorded: a ledger that cannot be written is refused
    // before any receiver is asked (`open_for_writing` says why and what
    // to fix).
    let wait = std::time::Duration::from_secs(args.wait);
    let mut ledger = super::ledger_arg::open_for_writing(&member.address, wait)?;
    let ids = targets(&ledger, args, &specs, now)?;
    let ops = probing::operations(&ledger, &ids)?;
    end_lookups_on_interrupt();
    let mut tally = Tally::default();
    let mut failed = None;
    let mut json_rows: Vec<Option<Value>> = vec![None; ops.len()];
    let position = |op: &Operation| ops.iter().position(|o| o.id == op.id);
    let key_width = ops
        .iter()
        .map(|o| unicode_width::UnicodeWidthStr::width(sanitize(&o.idem_key).as_ref()))
        .max()
        .unwrap_or(0)
        .min(KEY_WIDTH);
    // A filter may match thousands of rows: a bar says how far and how long.
    let steps = Steps::when(args.filter.is_some(), "probing", ops.len() as u64);
    probing::probe_all(&mut ledger, &receivers, &ops, &operator, &Utc::now, |p| {
        steps.inc();
        let probe_id = match p.recorded {
            Ok(id) => id,
            Err(e) => {
                failed = Some(e);
                return ControlFlow::Break(());
            }
        };
        tally.count(&p.lookup.outcome);
        let printed = steps.suspend(|| match args.format {
            ProbeFormat::Table => emit_page(|out| writeln!(out, "{}", table_line(&p, key_width))),
            ProbeFormat::Jsonl => {
                emit_page(|out| writeln!(out, "{}", json_safe(&json_row(&p, probe_id).to_string())))
            }
            ProbeFormat::Json => {
                if let Some(slot) = position(p.op).and_then(|i| json_rows.get_mut(i)) {
                    *slot = Some(json_row(&p, probe_id));
                }
                Ok(true)
            }
        });
        // A closed pipe or a failed write: ask no further receiver.
        match printed {
            Ok(true) => ControlFlow::Continue(()),
            Ok(false) => ControlFlow::Break(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    if args.format == ProbeFormat::Json {
        let rows: Vec<Value> = json_rows.into_iter().flatten().collect();
        emit_json(&Value::Array(rows))?;
    }
    steps.finish();
    eprintln!("settle: {}", tally.summary(ops.len()));
    if let Some(e) = failed {
        return Err(e);
    }
    match tally.unknown {
        0 => Ok(()),
        unknown => Err(Error::ProbesUnknown {
            unknown,
            total: tally.done,
        }),
    }
}

/// The operations to probe: those named (each once, in the order given),
/// or the queue rows `--filter` matches, bounded by `--limit` or `--all`.
fn targets(
    ledger: &Ledger,
    args: &ProbeArgs,
    specs: &[&str],
    now: DateTime<Utc>,
) -> Result<Vec<OperationId>> {
    let Some(filter) = &args.filter else {
        let mut ids = Vec::new();
        for spec in specs {
            let id = ledger.resolve(spec)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        return Ok(ids);
    };
    // Only the queue, as `settle decide --filter`: probing is for what
    // needs a person.
    let query = Query::parse(filter)?.and(Query::queue());
    let mut ids = probing::matching(ledger, &query, now)?;
    let shown = sanitize(filter);
    match (args.limit, args.all) {
        (_, true) => {}
        (Some(n), false) => {
            if ids.len() > n {
                eprintln!(
                    "settle: probing the first {n} of {} rows matching `{shown}`; {} more not probed (--limit N or --all)",
                    ids.len(),
                    ids.len() - n
                );
                ids.truncate(n);
            }
        }
        (None, false) => {
            return Err(Error::Usage(format!(
                "{} rows of the triage queue match `{shown}`; nothing probed\n  what to do: pass --limit N to probe at most N of them, or --all to probe every one",
                ids.len()
            )));
        }
    }
    Ok(ids)
}

/// `#42     k-42                 found      report-77`: id, key, outcome
/// and the result id or why, sanitised.
fn table_line(p: &Probed<'_>, key_width: usize) -> String {
    format!(
        "{:<7} {}  {:<9}  {}",
        format!("#{}", p.op.id),
        pad(&sanitize(&p.op.idem_key), key_width),
        outcome_word(&p.lookup.outcome),
        sanitize(&answer(&p.lookup.outcome))
    )
}

fn outcome_word(outcome: &LookupOutcome) -> &'static str {
    probing::outcome_of(outcome).as_str()
}

/// The result id found, or why there is none.
fn answer(outcome: &LookupOutcome) -> String {
    match outcome {
        LookupOutcome::Found { result_id } => result_id.clone(),
        LookupOutcome::NotFound => "the receiver has no record of the key".to_string(),
        LookupOutcome::Unknown { why } => why.clone(),
    }
}

/// One probe for scripts, with exact values: what a lookup said is
/// already sanitised by the runner, and the line is written through
/// [`json_safe`], so no control reaches a terminal raw.
fn json_row(p: &Probed<'_>, probe_id: i64) -> Value {
    let ran = p.lookup.ran.as_ref();
    json!({
        "op_id": p.op.id.0,
        "idem_key": p.op.idem_key,
        "outcome": outcome_word(&p.lookup.outcome),
        "result_id": match &p.lookup.outcome {
            LookupOutcome::Found { result_id } => Some(result_id.clone()),
            _ => None,
        },
        "why": match &p.lookup.outcome {
            LookupOutcome::Unknown { why } => Some(why.clone()),
            _ => None,
        },
        "exit": ran.map(|r| r.exit.to_string()),
        "command": ran.map(|r| r.command.clone()),
        "duration_ms": ran.map(|r| r.duration.as_millis()),
        "probe_id": probe_id,
    })
}

#[derive(Default)]
struct Tally {
    done: usize,
    found: usize,
    not_found: usize,
    unknown: usize,
}

impl Tally {
    fn count(&mut self, outcome: &LookupOutcome) {
        self.done += 1;
        match outcome {
            LookupOutcome::Found { .. } => self.found += 1,
            LookupOutcome::NotFound => self.not_found += 1,
            LookupOutcome::Unknown { .. } => self.unknown += 1,
        }
    }

    fn summary(&self, total: usize) -> String {
        format!(
            "probed {} of {total}: {} found, {} not found, {} unknown (each recorded)",
            self.done, self.found, self.not_found, self.unknown
        )
    }
}

/// Ctrl-C or a TERM ends the lookups still running with the command: each
/// runs in its own process group, which the terminal's signal never
/// reaches, and its timeout lives in this process. What was recorded stays.
fn end_lookups_on_interrupt() {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::receivers::kill_running();
            std::process::exit(128 + signal);
        }
    });
}
