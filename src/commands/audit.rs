//! `settle audit`: the decisions, newest first, in the list formats. A
//! decision's words come from [`crate::labels`], shared with `show` and the
//! console.

use serde_json::{Value, json};

use super::output::{csv_line, emit, emit_json};
use crate::cli::{AuditArgs, ListFormat};
use crate::domain::Decision;
use crate::error::Result;
use crate::labels;
use crate::store::Seek;
use crate::text::sanitize;

const CSV_HEADER: &str = "id,op_id,decision,from_state,to_state,result_id,evidence,note,operator,decided_at,op_version,undoes";

pub fn run(args: &AuditArgs) -> Result<()> {
    let ledger = super::open(&args.ledger, args.read_only)?;
    let decisions = ledger.audit_page(Seek::First, args.limit)?;
    if args.format == ListFormat::Json {
        return emit_json(&Value::Array(decisions.iter().map(decision_json).collect()));
    }
    if args.format == ListFormat::Table && decisions.is_empty() {
        eprintln!("settle: no decisions recorded");
    }
    emit(|out| {
        if args.format == ListFormat::Csv {
            writeln!(out, "{CSV_HEADER}")?;
        }
        for d in &decisions {
            match args.format {
                ListFormat::Table => writeln!(
                    out,
                    "op {:>8}  #{} {} {}",
                    d.op_id.0,
                    d.id,
                    sanitize(&d.decided_at),
                    labels::decision_line(d)
                )?,
                ListFormat::Csv => writeln!(out, "{}", csv_line(&decision_csv(d)))?,
                ListFormat::Jsonl | ListFormat::Json => writeln!(out, "{}", decision_json(d))?,
            }
        }
        Ok(())
    })
}

fn decision_csv(d: &Decision) -> [String; 12] {
    [
        d.id.to_string(),
        d.op_id.to_string(),
        d.decision.clone(),
        d.from_state.clone(),
        d.to_state.clone(),
        d.result_id.clone().unwrap_or_default(),
        d.evidence.clone().unwrap_or_default(),
        d.note.clone().unwrap_or_default(),
        d.operator.clone(),
        d.decided_at.clone(),
        d.op_version.to_string(),
        d.undoes.map(|u| u.to_string()).unwrap_or_default(),
    ]
}

/// A decision for scripts: every column, exact values.
pub(super) fn decision_json(d: &Decision) -> Value {
    json!({
        "id": d.id.0,
        "op_id": d.op_id.0,
        "decision": d.decision,
        "from_state": d.from_state,
        "to_state": d.to_state,
        "result_id": d.result_id,
        "evidence": d.evidence,
        "note": d.note,
        "operator": d.operator,
        "decided_at": d.decided_at,
        "op_version": d.op_version,
        "undoes": d.undoes.map(|u| u.0),
    })
}
