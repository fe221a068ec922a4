//! Drilling an op type's receiver and keeping what it proved: what `settle
//! drill run --ledger` and the console's driller share, so both take the
//! declared contract from the same row and record the same verdict.
//! Blocking; never touches the terminal or the console's model, and speaks
//! no SQL (the store does).

use std::path::Path;

use serde_json::Value;

use crate::domain::DrillVerdict;
use crate::domain::declared::merged;
use crate::drill::run::{Declared, Run};
use crate::error::Result;
use crate::receivers::Receivers;
use crate::store::Ledger;

/// The params every case sends when none are given: a receiver sees a
/// drill for what it is.
pub fn default_params() -> Value {
    serde_json::json!({ "drill": true })
}

/// The contract `op_types` and the receivers file declare for `op_type`
/// (the stricter where both do, as the decision rules take it), which the
/// run holds the receiver to (nothing declared: the checks that need it
/// say so).
pub fn declared(ledger: &Ledger, receivers: &Receivers, op_type: &str) -> Result<Declared> {
    let row = ledger.op_type_contract(op_type)?;
    let file = receivers.declarations().of(op_type);
    Ok(match merged(op_type, row.as_ref(), file.as_ref()) {
        Some(c) => Declared {
            idempotent: Some(c.idempotent),
            key_retention_s: c.key_retention_s,
        },
        None => Declared::default(),
    })
}

/// Records `run`'s verdict, its results in `file`; returns its id. A
/// duplicate an earlier run found in a case this run did not play again is
/// carried over: choosing other cases must not lift it.
pub fn record(ledger: &mut Ledger, run: &Run, file: &Path, operator: &str) -> Result<i64> {
    let v = &run.verdict;
    let mut duplicate = v
        .duplicate
        .as_ref()
        .map(|d| (d.case.clone(), d.why.clone()));
    let mut flaws = v.flaws.clone();
    if duplicate.is_none()
        && let Some(before) = ledger.latest_drill(&v.op_type)?
        && let Some(case) = before.duplicate_case
        && !run.cases.iter().any(|c| c.case == case)
    {
        let why = format!(
            "{} (found by run {}; case {case} not run again since)",
            before.duplicate_why.unwrap_or_default(),
            before.run
        );
        flaws.push(format!("duplicate under one key in {case}: {why}"));
        duplicate = Some((case, why));
    }
    ledger.record_drill(&DrillVerdict {
        id: 0,
        op_type: v.op_type.clone(),
        run: run.run_id.clone(),
        drilled_at: run.started_at.to_rfc3339(),
        results: file.display().to_string(),
        duplicate_case: duplicate.as_ref().map(|d| d.0.clone()),
        duplicate_why: duplicate.map(|d| d.1),
        params_ignored: v.params_ignored,
        flaws: flaws.join("\n"),
        operator: operator.to_string(),
    })
}
