//! Probing, so "did the effect happen?" is asked of the receivers that
//! know instead of guessed: runs the receivers' lookups for some
//! operations and records each answer as a probe, append-only, under the
//! operator's name. One code path for `settle probe` and the console's
//! prober thread, so both record the same thing. Blocking; never touches
//! the terminal or the console's model, and speaks no SQL (the store does).

use std::ops::ControlFlow;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::domain::{NewProbe, Operation, OperationId, ProbeOutcome, format_time};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::receivers::{self, Lookup, LookupOutcome, Ran, Receivers, Subject};
use crate::store::Ledger;

/// One lookup that ended, and whether its probe was recorded (its id).
pub struct Probed<'a> {
    pub op: &'a Operation,
    pub lookup: Lookup,
    pub recorded: Result<i64>,
}

/// The receivers file a probe asks, refused when none is configured: every
/// lookup would read unknown, and a ledger full of "not configured" probes
/// tells nobody anything.
pub fn receivers_for_probing(path: Option<&Path>) -> Result<Receivers> {
    let receivers = Receivers::load_configured(path)?;
    if receivers.source.is_none() {
        return Err(Error::Usage(
            "no receivers file: pass --receivers FILE, or write $XDG_CONFIG_HOME/settle/receivers.toml \
             (a lookup command per op type); nothing was probed"
                .to_string(),
        ));
    }
    Ok(receivers)
}

/// The operations `ids` name, as stored, in the order given.
pub fn operations(ledger: &Ledger, ids: &[OperationId]) -> Result<Vec<Operation>> {
    ids.iter()
        .map(|id| ledger.detail(*id).map(|d| d.operation))
        .collect()
}

/// The ids of the rows `query` matches, in the ledger's order.
pub fn matching(ledger: &Ledger, query: &Query, now: DateTime<Utc>) -> Result<Vec<OperationId>> {
    let mut ids = Vec::new();
    ledger.for_each_row(query, now, |row| {
        ids.push(row.id);
        Ok(())
    })?;
    Ok(ids)
}

/// Runs the lookups of `ops` (at most `receivers.concurrency` at once) and
/// records each answer as it comes, at the time `clock` says then; tells
/// `on_each` about each, in finishing order. `on_each` returning `Break`
/// starts no further lookup (those running still end and are recorded).
pub fn probe_all(
    ledger: &mut Ledger,
    receivers: &Receivers,
    ops: &[Operation],
    operator: &str,
    clock: &dyn Fn() -> DateTime<Utc>,
    mut on_each: impl FnMut(Probed<'_>) -> ControlFlow<()>,
) {
    let subjects: Vec<Subject> = ops.iter().map(Subject::from).collect();
    receivers::lookup_all(receivers, &subjects, |i, lookup| {
        let Some(op) = ops.get(i) else {
            return ControlFlow::Break(());
        };
        let probe = new_probe(op, &lookup, operator, clock());
        let recorded = ledger.record_probe(&probe);
        on_each(Probed {
            op,
            lookup,
            recorded,
        })
    });
}

/// The outcome a lookup's answer is recorded as.
pub fn outcome_of(outcome: &LookupOutcome) -> ProbeOutcome {
    match outcome {
        LookupOutcome::Found { .. } => ProbeOutcome::Found,
        LookupOutcome::NotFound => ProbeOutcome::NotFound,
        LookupOutcome::Unknown { .. } => ProbeOutcome::Unknown,
    }
}

/// What is recorded of one lookup of `op`. `exit` says how it ended in
/// words; for an unknown answer it is the reason (which begins with how it
/// ended: "exit 1: …", "timed out after 10 s (killed)", "exit 0 but no
/// result id …"), or why nothing ran.
pub fn new_probe(op: &Operation, lookup: &Lookup, operator: &str, at: DateTime<Utc>) -> NewProbe {
    let ran = lookup.ran.as_ref();
    let exit = match (&lookup.outcome, ran) {
        (LookupOutcome::Unknown { why }, _) => why.clone(),
        (_, Some(ran)) => ran.exit.to_string(),
        (_, None) => "not configured".to_string(),
    };
    NewProbe {
        op_id: op.id,
        idem_key: op.idem_key.clone(),
        command: ran.map_or_else(String::new, |r| r.command.clone()),
        outcome: outcome_of(&lookup.outcome),
        result_id: match &lookup.outcome {
            LookupOutcome::Found { result_id } => Some(result_id.clone()),
            _ => None,
        },
        exit,
        output: ran.and_then(output),
        operator: operator.to_string(),
        probed_at: format_time(at),
        duration_ms: ran.map_or(0, |r| {
            i64::try_from(r.duration.as_millis()).unwrap_or(i64::MAX)
        }),
    }
}

/// What the lookup printed, raw (it is sanitised where it is shown):
/// stdout, then stderr after a `[stderr]` line, each saying when it was
/// cut at the capture limit. `None` when it printed nothing.
fn output(ran: &Ran) -> Option<String> {
    let mut out = String::new();
    for (name, captured) in [("", &ran.stdout), ("[stderr]\n", &ran.stderr)] {
        if captured.text.is_empty() {
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(name);
        out.push_str(&captured.text);
        if captured.cut {
            out.push_str(&format!(
                "\n[cut at {} bytes]",
                crate::receivers::OUTPUT_CAP
            ));
        }
    }
    Some(out).filter(|o| !o.is_empty())
}
