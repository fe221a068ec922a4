//! The printers behind `settle drill show`: aligned text for people and a
//! stable JSON object for scripts. Pure functions returning values; the
//! caller prints them. Every string that came from a drill file goes through
//! [`crate::text::sanitize`] before it reaches text output.

use serde_json::{Map, Value, json};
use unicode_width::UnicodeWidthStr;

use super::analysis::{Analysis, CaseAnalysis, Severity, Verdict};
use super::read::DrillFile;
use crate::text::sanitize;

/// Names the JSON document, so scripts can tell a newer shape apart.
pub const JSON_FORMAT: &str = "settle-drill-show/1";

/// Raw values longer than this are cut in text output; JSON has them whole.
const RAW_WIDTH: usize = 80;

/// One block per file: a header, one aligned line per case, the reader's
/// warnings, the findings, and unknown fields shown raw.
pub fn render_text(files: &[(DrillFile, Analysis)]) -> String {
    let mut out = String::new();
    for (i, (file, analysis)) in files.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for line in text_lines(file, analysis) {
            out.push_str(&line.text);
            out.push('\n');
        }
    }
    out
}

/// One line of the text report, with what it says about the drill, so a
/// screen can pick its look from the analysis rather than from the words.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportLine {
    pub kind: LineKind,
    /// Sanitised, without a newline.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// The file's first line: its path, format and claim.
    Heading,
    /// Producer fields, reader warnings, the table's header, raw fields.
    Detail,
    /// One case of the table.
    Case(Verdict),
    /// The verdict totals.
    Totals {
        duplicates: usize,
    },
    Finding(Severity),
}

/// The text report of one file, line by line: what `settle drill show`
/// prints and the console's Drills view draws.
pub fn text_lines(file: &DrillFile, analysis: &Analysis) -> Vec<ReportLine> {
    let claimed = match file.passed {
        Some(true) => "says passed",
        Some(false) => "says failed",
        None => "says nothing about passing",
    };
    let mut out = vec![line(
        LineKind::Heading,
        format!(
            "{}: {}, generated {}, {} case(s), {claimed}",
            sanitize(&file.source.display().to_string()),
            sanitize(&file.format),
            sanitize(file.generated_at.as_deref().unwrap_or("(unknown)")),
            file.cases.len(),
        ),
    )];
    if !file.extra.is_empty() {
        let producer = format!("  producer: {}", raw_fields(&file.extra));
        out.push(line(LineKind::Detail, producer));
    }
    for warning in &file.warnings {
        let warning = format!("  warning: {}", sanitize(warning));
        out.push(line(LineKind::Detail, warning));
    }
    out.extend(case_table(analysis));
    let counts = [
        Verdict::Safe,
        Verdict::DuplicateEffect,
        Verdict::Unresolved,
        Verdict::Conflict,
    ]
    .map(|v| format!("{} {}", analysis.count(v), v.as_str()));
    out.push(line(
        LineKind::Totals {
            duplicates: analysis.count(Verdict::DuplicateEffect),
        },
        format!("verdicts: {}", counts.join(", ")),
    ));
    out.extend(finding_lines(analysis));
    let with_extra: Vec<_> = file.cases.iter().filter(|c| !c.extra.is_empty()).collect();
    if !with_extra.is_empty() {
        out.push(line(LineKind::Detail, "unknown fields (raw):".to_string()));
        for case in with_extra {
            let raw = format!("  {}: {}", sanitize(&case.case), raw_fields(&case.extra));
            out.push(line(LineKind::Detail, raw));
        }
    }
    out
}

fn line(kind: LineKind, text: String) -> ReportLine {
    ReportLine { kind, text }
}

/// The table of cases: a header and one aligned line per case.
fn case_table(analysis: &Analysis) -> Vec<ReportLine> {
    if analysis.cases.is_empty() {
        return vec![line(LineKind::Detail, "  (no cases)".to_string())];
    }
    let header = [
        "CASE", "STRATEGY", "ATTEMPTS", "EFFECTS", "CALLER", "PASSED", "VERDICT",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = std::iter::once(header)
        .chain(analysis.cases.iter().map(case_row))
        .collect();
    let kinds = std::iter::once(LineKind::Detail)
        .chain(analysis.cases.iter().map(|c| LineKind::Case(c.verdict)));
    kinds
        .zip(aligned(&rows))
        .map(|(kind, text)| line(kind, text))
        .collect()
}

fn finding_lines(analysis: &Analysis) -> Vec<ReportLine> {
    if analysis.findings.is_empty() {
        return Vec::new();
    }
    std::iter::once(line(LineKind::Detail, "findings:".to_string()))
        .chain(analysis.findings.iter().map(|finding| {
            let case = finding
                .case
                .as_deref()
                .map(|c| format!("{}: ", sanitize(c)))
                .unwrap_or_default();
            let text = format!(
                "  {:<7} {case}{}",
                finding.severity.as_str(),
                sanitize(&finding.text)
            );
            line(LineKind::Finding(finding.severity), text)
        }))
        .collect()
}

fn case_row(case: &CaseAnalysis) -> Vec<String> {
    let budget = case
        .max_attempts
        .map(|m| m.to_string())
        .unwrap_or_else(|| "?".to_string());
    let passed = match (case.passed_claimed, case.passed_recomputed) {
        (Some(claimed), Some(recomputed)) if claimed != recomputed => {
            format!("{} (recomputed {})", yes_no(claimed), yes_no(recomputed))
        }
        (Some(claimed), _) => yes_no(claimed).to_string(),
        (None, Some(recomputed)) => format!("({})", yes_no(recomputed)),
        (None, None) => "-".to_string(),
    };
    vec![
        sanitize(&case.case).into_owned(),
        sanitize(case.strategy.as_deref().unwrap_or("-")).into_owned(),
        format!("{}/{budget}", case.attempts_used),
        case.effect_count.to_string(),
        sanitize(case.caller_result.as_deref().unwrap_or("-")).into_owned(),
        passed,
        case.verdict.as_str().to_string(),
    ]
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Left-aligned columns two spaces apart, measured in terminal cells so
/// wide characters do not push later columns out of line. Cells must already
/// be sanitised. One string per row, without a newline.
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = Vec::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c].saturating_sub(cell.width()) + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push(line.trim_end().to_string());
    }
    out
}

/// `field=<json>` pairs, sanitised, each value cut to [`RAW_WIDTH`].
fn raw_fields(fields: &Map<String, Value>) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            let mut value = v.to_string();
            if value.chars().count() > RAW_WIDTH {
                value = value.chars().take(RAW_WIDTH).collect::<String>() + "…";
            }
            format!("{}={}", sanitize(k), sanitize(&value))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A stable machine-readable object: for each file its header, warnings,
/// unknown fields (raw), the analysis of each case with that case's unknown
/// fields, and the findings. Strings are the file's own (JSON escapes them);
/// a consumer printing them to a terminal must sanitise them itself.
pub fn render_json(files: &[(DrillFile, Analysis)]) -> Value {
    json!({
        "format": JSON_FORMAT,
        "files": files.iter().map(|(file, analysis)| file_json(file, analysis)).collect::<Vec<_>>(),
    })
}

fn file_json(file: &DrillFile, analysis: &Analysis) -> Value {
    let cases: Vec<Value> = analysis
        .cases
        .iter()
        .zip(&file.cases)
        .map(|(a, case)| {
            json!({
                "case": a.case,
                "title": case.title,
                "strategy": a.strategy,
                "verdict": a.verdict.as_str(),
                "attempts_used": a.attempts_used,
                "max_attempts": a.max_attempts,
                "budget_exhausted": a.budget_exhausted,
                "effect_count": a.effect_count,
                "committed_effects": a.committed_effects,
                "replayed_effects": a.replayed_effects,
                "duplicate": a.duplicate,
                "caller_result": a.caller_result,
                "passed": a.passed_claimed,
                "passed_recomputed": a.passed_recomputed,
                "attempts": a.attempts.iter().map(|t| json!({
                    "attempt": t.attempt,
                    "result": t.result,
                    "fault": t.fault,
                    "class": t.class.as_str(),
                    "committed": t.committed,
                })).collect::<Vec<_>>(),
                "checks": a.checks.iter().map(|c| json!({
                    "field": c.field,
                    "expected": c.expected,
                    "recomputed": c.recomputed,
                    "observed": c.observed,
                    "holds": c.holds(),
                })).collect::<Vec<_>>(),
                "unknown_events": a.unknown_events,
                "extra": case.extra,
            })
        })
        .collect();
    json!({
        "path": file.source.display().to_string(),
        "format": file.format,
        "generated_at": file.generated_at,
        "passed": file.passed,
        "warnings": file.warnings,
        "extra": file.extra,
        "cases": cases,
        "findings": analysis.findings.iter().map(|f| json!({
            "case": f.case,
            "severity": f.severity.as_str(),
            "text": f.text,
        })).collect::<Vec<_>>(),
    })
}
