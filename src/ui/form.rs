//! The decision popup: exactly what will be written (kind, operations, state
//! change, result id, evidence, note, override), and every rule check with
//! its verdict, recomputed from the model on each frame so it follows what
//! the operator types.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::draw::{centered, clean};
use super::theme::Theme;
use crate::app::bulk::{Bulk, BulkPreview, id_list};
use crate::app::form::{DecisionForm, Field, PlannedDecision};
use crate::domain::DecisionKind;
use crate::domain::IdLabels;
use crate::domain::rules::{RuleCheck, Verdict};

fn verb(kind: DecisionKind) -> &'static str {
    match kind {
        DecisionKind::Applied => "Record applied",
        DecisionKind::NotApplied => "Record not applied",
        DecisionKind::RetrySameKey => "Retry with the same key",
        DecisionKind::CancelRetry => "Cancel the pending retry",
        DecisionKind::Reopen => "Reopen (undo)",
    }
}

/// What the popup shows besides the form itself: who writes, at what
/// time the rules are judged, and whether the write is under way.
#[derive(Debug, Clone, Copy)]
pub struct Writing<'a> {
    /// How ids are said (`#pay:14` in a group).
    pub labels: &'a IdLabels,
    pub operator: &'a str,
    pub now: DateTime<Utc>,
    pub recording: bool,
}

pub fn render(form: &DecisionForm, writing: Writing, theme: Theme, frame: &mut Frame) {
    let lines = match &form.bulk {
        Some(bulk) => bulk_lines(writing, theme, form, bulk),
        None => lines(writing, theme, form),
    };
    let width = frame.area().width.min(100);
    // As tall as the wrapped text, so a short form does not hide the list.
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX);
    let area = centered(
        frame.area(),
        width,
        height.min(frame.area().height.saturating_sub(2)),
    );
    let title = match &form.bulk {
        Some(bulk) => format!(
            " {} — all matching ({}) ",
            verb(form.kind),
            bulk.preview
                .as_ref()
                .map(|p| p.matched as i64)
                .or(bulk.selection.count)
                .map_or("counting…".to_string(), |n| n.to_string())
        ),
        None => {
            let n = form.targets.len();
            format!(
                " {} — {n} operation{} ",
                verb(form.kind),
                if n == 1 { "" } else { "s" }
            )
        }
    };
    let block = Block::bordered().title(Span::styled(title, theme.title()));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}

/// The contract of each op type among the targets, and how it is known
/// (declared, or drilled on a date with the run): the rules trust it, so
/// the operator sees what they trust.
fn contract_lines(theme: Theme, form: &DecisionForm, out: &mut Vec<Line<'static>>) {
    let mut seen: Vec<&str> = Vec::new();
    for detail in form.details.as_deref().unwrap_or_default() {
        let op_type = detail.operation.op_type.as_str();
        // Marked rows of many op types: the first few, not a page of them.
        if seen.contains(&op_type) || seen.len() == 3 {
            continue;
        }
        seen.push(op_type);
        out.push(Line::styled(
            format!(
                "  contract of {}: {}",
                clean(op_type),
                clean(&detail.contract_source())
            ),
            theme.dim(),
        ));
    }
}

fn lines(writing: Writing, theme: Theme, form: &DecisionForm) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if form.details.is_none() {
        out.push(Line::styled("reading the operations…", theme.dim()));
        return out;
    }
    let plan = form.plan(writing.operator, writing.now);
    // What will be written, per operation.
    for p in &plan {
        out.push(target_line(theme, writing.labels, p));
    }
    // What the history shows, so the operator decides with it in view.
    if let Some([detail]) = form.details.as_deref() {
        let evidence = crate::domain::evidence::summarize(detail, writing.now);
        for fact in &evidence.facts {
            out.push(Line::styled(format!("  • {}", clean(fact)), theme.dim()));
        }
        out.push(Line::styled(
            format!("  → {}", clean(&evidence.suggestion)),
            theme.note(),
        ));
    }
    contract_lines(theme, form, &mut out);
    if let Some(undoes) = form.undoes {
        out.push(Line::raw(format!("undoes decision {undoes}")));
    }
    out.push(Line::styled(
        format!(
            "written as {}, only if each version is still the one shown",
            clean(writing.operator)
        ),
        theme.dim(),
    ));
    out.push(Line::raw(""));
    for field in form.fields() {
        out.push(field_line(theme, form, field));
    }
    out.push(Line::raw(""));
    out.push(Line::styled("Checks", theme.title()));
    check_lines(theme, writing.labels, &plan, &mut out);
    out.push(Line::raw(""));
    let refused = plan.iter().filter(|p| p.refused().is_some()).count();
    // After Enter the problem says it all; before, a summary of refusals.
    if refused > 0 && form.problem.is_none() {
        out.push(Line::styled(
            format!(
                "{refused} of {} refused: enter records nothing until every check passes",
                plan.len()
            ),
            theme.fail(),
        ));
    }
    if let Some(problem) = &form.problem {
        out.push(Line::styled(clean(problem), theme.error()));
    }
    if writing.recording {
        out.push(Line::styled(
            "recording… (Esc hides this form; the result shows on the status line)",
            theme.title(),
        ));
    }
    out
}

/// Every check of a single decision; for many, the checks that do not pass
/// (or that all of an operation's do).
fn check_lines(
    theme: Theme,
    labels: &IdLabels,
    plan: &[PlannedDecision],
    out: &mut Vec<Line<'static>>,
) {
    match plan {
        [only] => {
            for c in &only.checks {
                out.push(check_line(theme, labels, c, None));
            }
        }
        many => {
            for p in many {
                let shown: Vec<&RuleCheck> = p
                    .checks
                    .iter()
                    .filter(|c| !matches!(c.verdict, Verdict::Pass(_)))
                    .collect();
                if shown.is_empty() {
                    out.push(Line::from(vec![
                        Span::styled(" pass ", theme.pass()),
                        Span::raw(format!(
                            "#{} all {} checks pass",
                            p.draft.op_id,
                            p.checks.len()
                        )),
                    ]));
                }
                for c in shown {
                    out.push(check_line(theme, labels, c, Some(p)));
                }
            }
        }
    }
}

/// The bulk form: the filter, a sample of the rows, how many pass and
/// how many each rule would refuse, then the fields and the count to type.
fn bulk_lines(
    writing: Writing,
    theme: Theme,
    form: &DecisionForm,
    bulk: &Bulk,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let filter = match bulk.selection.filter.as_str() {
        "" => "(no filter)".to_string(),
        f => clean(f),
    };
    out.push(Line::from(vec![
        Span::styled("every row matching ", theme.dim()),
        Span::styled(filter, theme.title()),
    ]));
    match &bulk.preview {
        None => out.push(Line::styled("judging every matching row…", theme.dim())),
        Some(p) => preview_lines(theme, writing.labels, p, &mut out),
    }
    out.push(Line::styled(
        format!(
            "written as {}, in batches, each only if its version is still the one judged",
            clean(writing.operator)
        ),
        theme.dim(),
    ));
    out.push(Line::raw(""));
    for field in form.fields() {
        out.push(field_line(theme, form, field));
    }
    if let Some(problem) = &form.problem {
        out.push(Line::styled(clean(problem), theme.error()));
    }
    if writing.recording {
        out.push(Line::styled(
            "writing… (Esc hides this form; progress shows on the status line)",
            theme.title(),
        ));
    }
    out
}

/// What judging every matching row found: a sample, how many pass, and
/// how many each rule refuses or changed meanwhile.
fn preview_lines(theme: Theme, labels: &IdLabels, p: &BulkPreview, out: &mut Vec<Line<'static>>) {
    for line in &p.sample {
        out.push(Line::raw(format!("  {}", clean(line))));
    }
    if p.matched > p.sample.len() {
        out.push(Line::styled(
            format!("  and {} more", p.matched - p.sample.len()),
            theme.dim(),
        ));
    }
    out.push(Line::from(vec![
        Span::styled(" pass ", theme.pass()),
        Span::raw(format!(
            "{} of {} would be written",
            p.pass.len(),
            p.matched
        )),
    ]));
    if let Some(each) = p.per_ledger_text() {
        out.push(Line::raw(format!("      in each ledger: {}", clean(&each))));
    }
    for g in &p.refused {
        out.push(Line::from(vec![
            Span::styled(" FAIL ", theme.fail()),
            Span::raw(format!(
                "{} refused by {}: {} ({})",
                g.ids.len(),
                clean(&g.rule),
                clean(&g.reason),
                clean(&id_list(&g.ids, labels))
            )),
        ]));
    }
    if !p.changed.is_empty() {
        out.push(Line::from(vec![
            Span::styled(" skip ", theme.note()),
            Span::raw(format!(
                "{} changed while listed ({})",
                p.changed.len(),
                clean(&id_list(&p.changed, labels))
            )),
        ]));
    }
}

fn target_line(theme: Theme, labels: &IdLabels, p: &PlannedDecision) -> Line<'static> {
    let to = p.to.as_ref().map_or("?".to_string(), |s| clean(s.as_str()));
    let mut spans = vec![
        Span::styled(
            format!("{} ", clean(&labels.label(p.draft.op_id))),
            theme.title(),
        ),
        Span::raw(format!(
            "{} → {}  version {}",
            clean(p.from.as_str()),
            to,
            p.draft.expected_version
        )),
    ];
    if let Some(r) = &p.draft.result_id {
        spans.push(Span::raw(format!("  result id {}", clean(r))));
    }
    Line::from(spans)
}

fn field_line(theme: Theme, form: &DecisionForm, field: Field) -> Line<'static> {
    let focused = form.focus == field;
    let value = match field {
        Field::ResultId => form.result_id.clone(),
        Field::Evidence => form.evidence.clone(),
        Field::Note => form.note.clone(),
        Field::ConfirmCount => form.confirm_count.clone(),
        Field::Override => if form.override_committed {
            "[x] yes, with a note"
        } else {
            "[ ] no"
        }
        .to_string(),
    };
    let label = match field {
        Field::ConfirmCount => match &form.bulk {
            Some(b) => match &b.preview {
                Some(p) => format!("type {} to confirm", p.pass.len()),
                None => "type the count to confirm".to_string(),
            },
            None => format!("type {} to confirm", form.targets.len()),
        },
        Field::ResultId if form.is_multi() => {
            "result id (blank: each one's committed effect)".to_string()
        }
        f => f.label().to_string(),
    };
    let cursor = if focused && field != Field::Override {
        "▏"
    } else {
        ""
    };
    Line::from(vec![
        Span::styled(if focused { "> " } else { "  " }, theme.key()),
        Span::styled(
            format!("{label:<14} "),
            if focused { theme.focus() } else { theme.dim() },
        ),
        Span::raw(format!("{}{cursor}", clean(&value))),
    ])
}

fn check_line(
    theme: Theme,
    labels: &IdLabels,
    c: &RuleCheck,
    row: Option<&PlannedDecision>,
) -> Line<'static> {
    let (tag, style) = match c.verdict {
        Verdict::Pass(_) => (" pass ", theme.pass()),
        Verdict::Fail(_) => (" FAIL ", theme.fail()),
        Verdict::Note(_) => (" note ", theme.note()),
    };
    let who = row
        .map(|p| format!("{} ", clean(&labels.label(p.draft.op_id))))
        .unwrap_or_default();
    Line::from(vec![
        Span::styled(tag, style),
        Span::raw(format!("{who}{:<22} ", c.rule.label())),
        Span::raw(clean(c.verdict.text())),
    ])
}
