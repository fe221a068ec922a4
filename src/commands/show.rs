//! `settle show`: one operation with its attempts, events, decisions, the
//! evidence summary and what may be decided now, as text for people or JSON
//! for scripts. The words come from [`crate::labels`], shared with the
//! console's detail.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::output::{emit, emit_json};
use crate::cli::config::Config;
use crate::cli::ledger_set::Member;
use crate::cli::{ShowArgs, ShowFormat};
use crate::domain::key_expiry::{KeyExpiry, key_expiry};
use crate::domain::rules::{self, Verdict};
use crate::domain::{
    DecisionKind, Malformed, OperationDetail, Probe, RetryRequest, age, evidence, format_time,
};
use crate::error::Result;
use crate::export::{decision_json, malformed_json};
use crate::labels;
use crate::text::sanitize;

pub fn run(args: &ShowArgs, config: &Config, now: DateTime<Utc>) -> Result<()> {
    let open = |m: &Member| super::ledger_arg::open_for_reading(&m.address);
    let found = super::ledger_arg::locate(&args.set, &args.op, open)?;
    let receivers = args.receivers.receivers.as_deref();
    let receivers = receivers.or(found.member.receivers.as_deref());
    let mut ledger = found.ledger;
    super::ledger_arg::declare(&mut ledger, receivers.or(config.receivers.as_deref()))?;
    let detail = ledger.detail(found.id)?;
    match args.format {
        ShowFormat::Json => emit_json(&detail_json(&detail, now)),
        ShowFormat::Text => emit(|out| out.write_all(detail_text(&detail, now).as_bytes())),
    }
}

/// What each decision kind would meet now, judged by the contract's rules
/// with the operator's text assumed given (the text is theirs to supply).
fn decision_outlook(detail: &OperationDetail, now: DateTime<Utc>) -> Vec<(DecisionKind, Verdict)> {
    [
        DecisionKind::Applied,
        DecisionKind::NotApplied,
        DecisionKind::RetrySameKey,
        DecisionKind::CancelRetry,
    ]
    .into_iter()
    .map(|kind| {
        // The store refuses these before any rule (see `Rule::RowReadable`).
        if let Some(bad) = detail.operation.malformed_identity() {
            let label = rules::Rule::RowReadable.label();
            return (kind, Verdict::Fail(format!("{label}: {}", bad.refusal())));
        }
        let checks = rules::check_kind(kind, detail, now);
        let verdict = match rules::refusal(&checks) {
            Some(c) => Verdict::Fail(format!("{}: {}", c.rule.label(), c.verdict.text())),
            None => Verdict::Pass(
                checks
                    .iter()
                    .filter_map(|c| match &c.verdict {
                        Verdict::Note(t) => Some(t.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        };
        (kind, verdict)
    })
    .collect()
}

fn s(t: &str) -> String {
    sanitize(t).into_owned()
}

fn opt(t: &Option<String>) -> String {
    t.as_deref().map(s).unwrap_or_else(|| "-".to_string())
}

fn detail_text(detail: &OperationDetail, now: DateTime<Utc>) -> String {
    let mut o = String::new();
    fields_text(&mut o, detail, now);
    history_text(&mut o, detail);
    judgement_text(&mut o, detail, now);
    o
}

/// The operation's own fields and its parameters.
fn fields_text(o: &mut String, detail: &OperationDetail, now: DateTime<Utc>) {
    let op = &detail.operation;
    let state = labels::state_label_long(&op.state, op.is_stale_reservation(now));
    let _ = writeln!(o, "operation {}  {}", op.id, s(&op.natural_key()));
    if !op.malformed.is_empty() {
        let _ = writeln!(o, "  ! malformed  {}", Malformed::describe(&op.malformed));
        if let Some(bad) = op.malformed_identity() {
            let _ = writeln!(o, "  ! no decision: {}", bad.refusal());
        }
    }
    for line in &detail.history_malformed {
        let _ = writeln!(o, "  ! malformed  {line}");
    }
    let _ = writeln!(o, "  state        {state}  (version {})", op.version);
    let _ = writeln!(o, "  account      {}", s(&op.account));
    let contract = detail.contract_summary();
    let _ = writeln!(o, "  op type      {}  ({contract})", s(&op.op_type));
    let _ = writeln!(o, "  contract     {}", s(&detail.contract_source()));
    let _ = writeln!(o, "  key          {}", s(&op.idem_key));
    let _ = writeln!(o, "  fingerprint  {}", s(&op.fingerprint));
    let _ = writeln!(o, "  result id    {}", opt(&op.result_id));
    let _ = writeln!(
        o,
        "  attempts     {}/{}",
        detail.attempts_used(),
        op.max_attempts
    );
    let _ = writeln!(o, "  deadline     {}", opt(&op.deadline_at));
    let _ = writeln!(o, "  lease until  {}", opt(&op.lease_expires_at));
    let _ = writeln!(o, "  key expires  {}", labels::key_expiry_text(detail, now));
    let _ = writeln!(
        o,
        "  created      {}   updated {} ({} ago)",
        s(&op.created_at),
        s(&op.updated_at),
        age(&op.updated_at, now)
    );
    if let Some(params) = &op.params {
        let _ = writeln!(o, "\nparams");
        for line in labels::pretty_params(params) {
            let _ = writeln!(o, "  {line}");
        }
    }
}

/// Attempts, events, decisions and retry requests, as recorded.
fn history_text(o: &mut String, detail: &OperationDetail) {
    let _ = writeln!(o, "\nattempts");
    if detail.attempts.is_empty() {
        let _ = writeln!(o, "  (none recorded)");
    }
    for a in &detail.attempts {
        let _ = writeln!(
            o,
            "  #{:<3} {:<9} {} -> {}{}{}",
            a.attempt,
            s(a.outcome.as_str()),
            s(&a.started_at),
            opt(&a.ended_at),
            a.error
                .as_deref()
                .map(|e| format!("  error: {}", labels::long_text(e)))
                .unwrap_or_default(),
            a.response
                .as_deref()
                .map(|r| format!("  response: {}", labels::long_text(r)))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(o, "\nevents");
    if detail.events.is_empty() {
        let _ = writeln!(o, "  (none recorded)");
    }
    for e in &detail.events {
        let _ = writeln!(
            o,
            "  {}  {:<8} {}{}",
            s(&e.at),
            e.attempt
                .map(|a| format!("#{a}"))
                .unwrap_or_else(|| "-".to_string()),
            s(&e.event),
            e.detail
                .as_deref()
                .map(|d| format!("  {}", labels::long_text(d)))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(o, "\ndecisions");
    if detail.decisions.is_empty() {
        let _ = writeln!(o, "  (none)");
    }
    for d in &detail.decisions {
        let _ = writeln!(
            o,
            "  #{} {} {}",
            d.id,
            s(&d.decided_at),
            labels::decision_line(d)
        );
    }
    probes_text(o, detail);
    if !detail.retry_requests.is_empty() {
        let _ = writeln!(o, "\nretry requests");
        for r in &detail.retry_requests {
            let _ = writeln!(
                o,
                "  {} at {} (decision {})",
                labels::retry_request_line(r),
                s(&r.requested_at),
                r.decision_id
            );
        }
    }
}

/// What the receivers answered, newest last; what a lookup printed is
/// untrusted and goes through the same sanitising as ledger text.
fn probes_text(o: &mut String, detail: &OperationDetail) {
    let _ = writeln!(o, "\nprobes");
    if detail.probes.is_empty() {
        let _ = writeln!(o, "  (none)");
    }
    for p in &detail.probes {
        let _ = writeln!(
            o,
            "  #{} {} {}",
            p.id,
            s(&p.probe.probed_at),
            labels::probe_line(p)
        );
        if let Some(output) = labels::probe_output(p) {
            let _ = writeln!(o, "      output: {output}");
        }
    }
}

/// What the evidence shows and what each decision would meet now.
fn judgement_text(o: &mut String, detail: &OperationDetail, now: DateTime<Utc>) {
    let summary = evidence::summarize(detail, now);
    let _ = writeln!(o, "\nevidence");
    for fact in &summary.facts {
        let _ = writeln!(o, "  - {}", s(fact));
    }
    let _ = writeln!(o, "  => {}", s(&summary.suggestion));
    let _ = writeln!(o, "\nwhat may be decided now");
    for (kind, verdict) in decision_outlook(detail, now) {
        let text = match &verdict {
            Verdict::Fail(t) => format!("refused: {t}"),
            Verdict::Pass(t) if t.is_empty() => "allowed".to_string(),
            Verdict::Pass(t) | Verdict::Note(t) => format!("allowed ({t})"),
        };
        let _ = writeln!(o, "  {:<15} {}", kind.as_str(), s(&text));
    }
}

/// When the key really expires (see [`key_expiry`]); `null` when never.
fn key_expiry_json(detail: &OperationDetail) -> Value {
    match key_expiry(detail) {
        KeyExpiry::Never => Value::Null,
        KeyExpiry::At { at, why } => json!({ "at": format_time(at), "why": why }),
        KeyExpiry::Unreadable(why) => json!({ "at": null, "why": why }),
    }
}

fn detail_json(detail: &OperationDetail, now: DateTime<Utc>) -> Value {
    let summary = evidence::summarize(detail, now);
    json!({
        "operation": operation_json(detail, now),
        "history_malformed": detail.history_malformed,
        // The contract the rules use: the row's, the receivers file's, or
        // the stricter of the two; `contract_source` says whose.
        "contract": detail.effective_contract().map(|c| json!({
            "op_type": c.op_type,
            "idempotent": c.idempotent,
            "key_retention_s": c.key_retention_s,
            "description": c.description,
        })),
        "contract_source": detail.contract_source(),
        "drill": detail.drill.as_ref().map(|d| json!({
            "run": d.run,
            "drilled_at": d.drilled_at,
            "results": d.results,
            "duplicate_case": d.duplicate_case,
            "duplicate_why": d.duplicate_why,
            "params_ignored": d.params_ignored,
            "flaws": d.flaws.lines().collect::<Vec<_>>(),
        })),
        "attempts": detail.attempts.iter().map(|a| json!({
            "attempt": a.attempt,
            "started_at": a.started_at,
            "ended_at": a.ended_at,
            "outcome": a.outcome.as_str(),
            "error": a.error,
            "response": stored_json(&a.response),
        })).collect::<Vec<_>>(),
        "events": detail.events.iter().map(|e| json!({
            "id": e.id,
            "attempt": e.attempt,
            "at": e.at,
            "event": e.event,
            "detail": stored_json(&e.detail),
        })).collect::<Vec<_>>(),
        "decisions": detail.decisions.iter().map(decision_json).collect::<Vec<_>>(),
        "retry_requests": detail.retry_requests.iter().map(retry_request_json).collect::<Vec<_>>(),
        "probes": detail.probes.iter().map(probe_json).collect::<Vec<_>>(),
        "evidence": { "facts": summary.facts, "suggestion": summary.suggestion },
        "may_decide": decision_outlook(detail, now).into_iter().map(|(kind, v)| json!({
            "decision": kind.as_str(),
            "allowed": !v.is_fail(),
            "why": v.text(),
        })).collect::<Vec<_>>(),
    })
}

/// A text column that holds JSON, as JSON; text that is not JSON stays a
/// string, so nothing the service wrote is dropped.
fn stored_json(text: &Option<String>) -> Option<Value> {
    text.as_deref()
        .map(|t| serde_json::from_str::<Value>(t).unwrap_or_else(|_| Value::String(t.to_string())))
}

/// The operation's own row, with what the console judges of it now.
fn operation_json(detail: &OperationDetail, now: DateTime<Utc>) -> Value {
    let op = &detail.operation;
    json!({
        "id": op.id.0,
        "account": op.account,
        "op_type": op.op_type,
        "idem_key": op.idem_key,
        "fingerprint": op.fingerprint,
        "params": stored_json(&op.params),
        "state": op.state.as_str(),
        "stale_reservation": op.is_stale_reservation(now),
        "in_queue": op.in_queue(now),
        "result_id": op.result_id,
        "max_attempts": op.max_attempts,
        "deadline_at": op.deadline_at,
        "lease_expires_at": op.lease_expires_at,
        "key_expires_at": op.key_expires_at,
        "key_expiry": key_expiry_json(detail),
        "created_at": op.created_at,
        "updated_at": op.updated_at,
        "version": op.version,
        "malformed": malformed_json(&op.malformed),
    })
}

fn retry_request_json(r: &RetryRequest) -> Value {
    json!({
        "id": r.id,
        "requested_at": r.requested_at,
        "requested_by": r.requested_by,
        "status": r.status,
        "decision_id": r.decision_id.0,
        "claimed_by": r.progress.claimed_by,
        "claim_expires_at": r.progress.claim_expires_at,
        "runs": r.progress.runs,
        "finished_at": r.progress.finished_at,
        "outcome": r.progress.outcome,
    })
}

fn probe_json(Probe { id, probe: p }: &Probe) -> Value {
    json!({
        "id": id,
        "probed_at": p.probed_at,
        "operator": p.operator,
        "command": p.command,
        "outcome": p.outcome.as_str(),
        "result_id": p.result_id,
        "exit": p.exit,
        "output": p.output,
        "duration_ms": p.duration_ms,
    })
}
