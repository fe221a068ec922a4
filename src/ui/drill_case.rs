//! The open drill case, beside the Drills list when wide and below it when
//! narrow (the same place as an operation's detail): its verdict and the
//! findings about it first (what the reader came for), then the
//! expectation checked field by field, one timeline of attempts with the
//! events each caused and the key each used (after the callers' columns
//! side by side, `drill_callers`, when several callers ran at once), the effects the receiver kept
//! with their ids, and what the case drove.
//! For an unreadable file, the path and why. Every string from the file is
//! untrusted and passes through `clean`; nothing here judges a case, that
//! is `drill::analysis`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use serde_json::Value;

use super::draw::clean;
use super::drills::passed;
use super::theme::Theme;
use crate::app::DrillsPane;
use crate::app::drills::loaded::CaseView;
use crate::domain::OperationId;
use crate::drill::{DrillEvent, Severity};

pub fn render(pane: &DrillsPane, theme: Theme, frame: &mut Frame, area: Rect) {
    let block = Block::bordered();
    let Some(row) = pane.selected() else {
        frame.render_widget(Paragraph::new("no case selected").block(block), area);
        return;
    };
    let (title, lines) = match pane.case_view(row) {
        Some(view) => (
            format!(" case {} (J/K scroll) ", clean(&view.analysis.case)),
            case_lines(theme, &view, pane.link(row), area.width.saturating_sub(2)),
        ),
        None => {
            let loaded = pane.files.get(row.file);
            let path = loaded.map_or(String::new(), |f| clean(&f.path));
            let why = match loaded.map(|f| &f.analysis) {
                Some(Err(e)) => clean(e),
                _ => "no such case".to_string(),
            };
            (
                " unreadable drill file ".to_string(),
                vec![
                    Line::styled(path, theme.title()),
                    Line::raw(""),
                    Line::styled(why, theme.error()),
                ],
            )
        }
    };
    let paragraph = Paragraph::new(lines)
        .block(block.title(title))
        .wrap(Wrap { trim: false });
    // Never scroll past the end: the last screenful stays in view.
    let inner = area.height.saturating_sub(2);
    let content =
        u16::try_from(paragraph.line_count(area.width.saturating_sub(2))).unwrap_or(u16::MAX);
    let scroll = pane.detail_scroll.min(content.saturating_sub(inner));
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}

fn field(theme: Theme, name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<12}"), theme.dim()),
        Span::raw(value),
    ])
}

fn heading(theme: Theme, text: String) -> Line<'static> {
    Line::from(Span::styled(text, theme.title()))
}

/// A JSON value as one line: strings bare, the rest as JSON, `—` for none.
fn value_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "—".to_string(),
        Some(Value::String(s)) => clean(s),
        Some(other) => clean(&other.to_string()),
    }
}

fn text_or_dash(text: Option<&str>) -> String {
    text.map_or("—".to_string(), clean)
}

/// `link`: the operation an import of the case wrote (`Some(None)`: the
/// ledger has none; `None`: still asked).
/// `width`: the pane's inner width, which the callers' columns share.
fn case_lines(
    theme: Theme,
    view: &CaseView<'_>,
    link: Option<Option<OperationId>>,
    width: u16,
) -> Vec<Line<'static>> {
    let (case, a) = (view.case, view.analysis);
    let mut out = vec![heading(
        theme,
        match &case.title {
            Some(t) => format!("{} — {}", clean(&a.case), clean(t)),
            None => clean(&a.case),
        },
    )];
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "verdict"), theme.dim()),
        Span::styled(a.verdict.as_str(), theme.verdict(a.verdict)),
    ]));
    out.push(match link {
        Some(Some(id)) => Line::from(vec![
            Span::styled(format!("{:<12}", "ledger"), theme.dim()),
            Span::styled(format!("in the ledger: #{id}"), theme.title()),
            Span::raw(" (o opens it)"),
        ]),
        Some(None) => field(
            theme,
            "ledger",
            "not in the ledger (settle drill import FILE LEDGER)".to_string(),
        ),
        None => field(theme, "ledger", "looking in the ledger…".to_string()),
    });
    out.push(field(
        theme,
        "passed",
        format!(
            "{} (the file says {})",
            passed(a),
            a.passed_claimed
                .map_or("nothing", |p| if p { "yes" } else { "no" })
        ),
    ));
    out.push(field(
        theme,
        "caller",
        text_or_dash(a.caller_result.as_deref()),
    ));
    out.push(field(
        theme,
        "attempts",
        match a.max_attempts {
            Some(max) if a.budget_exhausted => {
                format!("{} of {max}, budget exhausted", a.attempts_used)
            }
            Some(max) => format!("{} of {max}", a.attempts_used),
            None => a.attempts_used.to_string(),
        },
    ));

    findings(theme, view, &mut out);
    expectation(theme, view, &mut out);
    out.push(Line::raw(""));
    out.push(heading(theme, "Timeline".to_string()));
    if let Some(columns) = super::drill_callers::lines(theme, view.case, usize::from(width)) {
        out.extend(columns);
        out.push(Line::raw(""));
    }
    timeline(theme, view, &mut out);
    effects(theme, view, &mut out);
    about(theme, view, &mut out);
    out
}

fn findings(theme: Theme, view: &CaseView<'_>, out: &mut Vec<Line<'static>>) {
    out.push(Line::raw(""));
    out.push(heading(
        theme,
        format!("Findings ({})", view.findings.len()),
    ));
    for finding in &view.findings {
        let style = match finding.severity {
            Severity::Error => theme.fail(),
            Severity::Warning => theme.note(),
            Severity::Note => theme.dim(),
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {:<8}", finding.severity.as_str()), style),
            Span::raw(clean(&finding.text)),
        ]));
    }
}

/// Each field the case expected, against what this analysis recomputed and
/// what the producer observed.
fn expectation(theme: Theme, view: &CaseView<'_>, out: &mut Vec<Line<'static>>) {
    let a = view.analysis;
    out.push(Line::raw(""));
    out.push(heading(theme, "Expectation".to_string()));
    if a.checks.is_empty() {
        out.push(Line::styled("  the file states none", theme.dim()));
    }
    for check in &a.checks {
        let (mark, style) = match check.holds() {
            Some(true) => ("✓", theme.pass()),
            Some(false) => ("✗", theme.fail()),
            None => ("?", theme.note()),
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {mark} "), style),
            Span::raw(format!(
                "{}: expected {}, recomputed {}, observed {}",
                clean(&check.field),
                value_text(Some(&check.expected)),
                value_text(check.recomputed.as_ref()),
                value_text(check.observed.as_ref()),
            )),
        ]));
    }
}

fn effects(theme: Theme, view: &CaseView<'_>, out: &mut Vec<Line<'static>>) {
    let case = view.case;
    out.push(Line::raw(""));
    let effects = case
        .final_state
        .as_ref()
        .map_or(&[][..], |s| &s.effects[..]);
    out.push(heading(
        theme,
        format!("Effects the receiver kept ({})", effects.len()),
    ));
    if case.final_state.is_none() {
        out.push(Line::styled("  the file has no final state", theme.dim()));
    }
    for effect in effects {
        out.push(Line::raw(format!(
            "  {}  key {}  {}",
            text_or_dash(effect.id.as_deref()),
            text_or_dash(effect.key.as_deref()),
            value_text(effect.params.as_ref()),
        )));
    }
}

/// What the case drove: last, as it is the same for every verdict.
fn about(theme: Theme, view: &CaseView<'_>, out: &mut Vec<Line<'static>>) {
    let (case, a) = (view.case, view.analysis);
    out.push(Line::raw(""));
    out.push(heading(theme, "About the case".to_string()));
    out.push(field(theme, "run", clean(&view.loaded.path)));
    out.push(field(
        theme,
        "strategy",
        text_or_dash(a.strategy.as_deref()),
    ));
    if let Some(op) = &case.operation {
        out.push(field(
            theme,
            "operation",
            format!(
                "{} · {} · key {}",
                text_or_dash(op.account.as_deref()),
                text_or_dash(op.op_type.as_deref()),
                text_or_dash(op.key.as_deref()),
            ),
        ));
        out.push(field(theme, "params", value_text(op.params.as_ref())));
    }
    if !view.file_notes.is_empty() {
        out.push(Line::raw(""));
        out.push(heading(theme, "About the file".to_string()));
        out.extend(
            view.file_notes
                .iter()
                .map(|note| Line::raw(format!("  {}", clean(note)))),
        );
    }
}

/// Each attempt, then the receiver events it caused; events tied to no
/// attempt come last.
fn timeline(theme: Theme, view: &CaseView<'_>, out: &mut Vec<Line<'static>>) {
    let case = view.case;
    for (i, attempt) in case.attempts.iter().enumerate() {
        let class = view
            .analysis
            .attempts
            .get(i)
            .map_or("", |c| c.class.as_str());
        out.push(Line::from(vec![
            Span::styled(format!("  attempt {}", attempt.attempt), theme.title()),
            Span::raw(format!(
                "  key {}  fault {}  → {} ({class})",
                text_or_dash(attempt.key.as_deref()),
                text_or_dash(attempt.fault.as_deref()),
                text_or_dash(attempt.result.as_deref()),
            )),
        ]));
        out.push(Line::styled(
            format!(
                "    {} … {}",
                text_or_dash(attempt.started_at.as_deref()),
                text_or_dash(attempt.ended_at.as_deref())
            ),
            theme.dim(),
        ));
        if let Some(response) = &attempt.response {
            out.push(Line::raw(format!(
                "    response {}",
                value_text(Some(response))
            )));
        }
        for event in case
            .events
            .iter()
            .filter(|e| e.attempt == Some(attempt.attempt))
        {
            out.push(event_line(theme, event));
        }
    }
    let attempts: Vec<i64> = case.attempts.iter().map(|a| a.attempt).collect();
    let loose: Vec<&DrillEvent> = case
        .events
        .iter()
        .filter(|e| e.attempt.is_none_or(|n| !attempts.contains(&n)))
        .collect();
    if !loose.is_empty() {
        out.push(Line::styled("  events of no attempt", theme.title()));
        out.extend(loose.into_iter().map(|e| event_line(theme, e)));
    }
    if case.attempts.is_empty() && case.events.is_empty() {
        out.push(Line::styled("  no attempts or events", theme.dim()));
    }
}

/// `    #1 22:28:54.684Z committed  effect_id report-1`: the event's
/// number, its time of day (the attempt line above has the date), its word
/// as written and its other fields in file order.
fn event_line(theme: Theme, event: &DrillEvent) -> Line<'static> {
    let seq = event.seq.map_or("  ".to_string(), |s| format!("#{s}"));
    let details: Vec<String> = event
        .detail
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| format!("{} {}", clean(k), value_text(Some(v))))
        .collect();
    let style = if event.effect_id().is_some() {
        theme.note()
    } else {
        Default::default()
    };
    let at = event
        .at
        .as_deref()
        .map_or("", |t| t.split_once('T').map_or(t, |(_, time)| time));
    Line::from(vec![
        Span::styled(format!("    {seq} {} ", clean(at)), theme.dim()),
        Span::styled(clean(&event.event), style),
        Span::raw(format!("  {}", details.join("  "))),
    ])
}
