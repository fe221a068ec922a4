//! The producer's own claims about a case (`observed`, `expected`,
//! `passed`) held against what the analysis recomputes from the same file.
//! Every contradiction becomes a finding; the file is never corrected.

use serde_json::Value;

use super::findings::{FieldCheck, Severity};
use crate::drill::read::DrillCase;

/// What this analysis computes from attempts, events and final state, to
/// hold the producer's `observed` and `expected` against.
pub(super) struct Recomputed<'a> {
    pub(super) effect_count: usize,
    pub(super) attempt_count: usize,
    pub(super) caller_result: Option<&'a str>,
}

impl Recomputed<'_> {
    /// `None` for a field this analysis cannot compute.
    fn field(&self, field: &str) -> Option<Value> {
        match field {
            "effect_count" => Some(Value::from(self.effect_count)),
            "attempt_count" => Some(Value::from(self.attempt_count)),
            "caller_result" => self.caller_result.map(Value::from),
            _ => None,
        }
    }
}

/// Each `expected` field against the recomputed value (or, failing that,
/// the observed one), noting every `observed` or `expected` the file
/// contradicts.
pub(super) fn check_expectations(
    case: &DrillCase,
    recomputed: &Recomputed,
    note: &mut impl FnMut(Severity, String),
) -> Vec<FieldCheck> {
    // The producer's `observed` is a claim like any other: every field this
    // analysis can recompute is checked, whether or not it was expected.
    for (field, observed) in case.observed.iter().flatten() {
        if let Some(recomputed) = recomputed.field(field)
            && recomputed != *observed
        {
            note(
                Severity::Warning,
                format!("observed {field} = {observed}, but the file shows {recomputed}"),
            );
        }
    }
    let checks: Vec<FieldCheck> = case
        .expected
        .iter()
        .flatten()
        .map(|(field, value)| FieldCheck {
            field: field.clone(),
            expected: value.clone(),
            recomputed: recomputed.field(field),
            observed: case.observed.as_ref().and_then(|o| o.get(field)).cloned(),
        })
        .collect();
    for check in &checks {
        if check.holds() == Some(false) {
            let actual = check.recomputed.as_ref().or(check.observed.as_ref());
            note(
                Severity::Warning,
                format!(
                    "expected {} = {}, got {}",
                    check.field,
                    check.expected,
                    actual.map(Value::to_string).unwrap_or_default()
                ),
            );
        }
    }
    checks
}

/// `passed` recomputed from the checks (`None` without `expected`); a
/// producer's `passed` that disagrees is a finding.
pub(super) fn recompute_passed(
    case: &DrillCase,
    checks: &[FieldCheck],
    note: &mut impl FnMut(Severity, String),
) -> Option<bool> {
    let passed_recomputed = case
        .expected
        .as_ref()
        .map(|_| checks.iter().all(|c| c.holds().unwrap_or(true)));
    if let (Some(claimed), Some(recomputed)) = (case.passed, passed_recomputed)
        && claimed != recomputed
    {
        note(
            Severity::Warning,
            format!("the file says passed={claimed}, recomputed it is {recomputed}"),
        );
    }
    passed_recomputed
}
