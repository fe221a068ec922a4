//! The two top lines: which ledger, who, read-only and live markers; the
//! view tabs and the counts per state (from the worker; "counting…" until it
//! answers).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::draw::{clean, duration};
use super::theme::Theme;
use super::timeline;
use crate::app::App;
use crate::domain::State;
use crate::store::StateCounts;

pub fn render(app: &App, theme: Theme, frame: &mut Frame, header: Rect, tabs: Rect) {
    let mut spans = vec![
        Span::styled("settle ", theme.title()),
        Span::raw(clean(&app.ledger_path)),
        Span::styled("  operator ", theme.dim()),
        Span::raw(clean(&app.operator)),
        Span::raw("  "),
    ];
    if let Some(p) = app.adopting() {
        spans.push(Span::styled(
            // `done` counts the steps finished; the one running is next
            // (the last report, "committing", comes with all of them done).
            format!(
                " ADOPTING {}/{}: {} ",
                (p.done + 1).min(p.total),
                p.total,
                clean(&p.step)
            ),
            theme.read_only(),
        ));
        spans.push(Span::raw(" "));
    } else if app.read_only() {
        let badge = match &app.read_only_reason {
            Some(why) => format!(" READ-ONLY: {} ", clean(why)),
            None => " READ-ONLY ".to_string(),
        };
        spans.push(Span::styled(badge, theme.read_only()));
        spans.push(Span::raw(" "));
    }
    if app.file_problem.is_some() {
        spans.push(Span::styled("✕ file deleted or replaced", theme.error()));
    } else if app.live_error.is_some() {
        spans.push(Span::styled("✕ not live", theme.error()));
    } else {
        spans.push(Span::styled("● live", theme.live()));
    }
    if let Some(at) = app.last_change {
        spans.push(Span::styled(
            format!(" · changed {} ago", duration((app.now - at).num_seconds())),
            theme.dim(),
        ));
    }
    let line = Line::from(spans);
    let used = u16::try_from(line.width()).unwrap_or(u16::MAX);
    frame.render_widget(Paragraph::new(line), header);
    timeline::history(&app.queue_history, app.now, theme, frame, header, used);
    frame.render_widget(Paragraph::new(Line::from(tab_spans(app, theme))), tabs);
}

/// The view tabs, each list's with its count, then the counts per state.
fn tab_spans(app: &App, theme: Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (view, label) in app.tab_labels() {
        let style = if view == app.view {
            theme.selected()
        } else {
            theme.dim()
        };
        spans.push(Span::styled(label, style));
    }
    spans.push(Span::raw(" │ "));
    match &app.counts {
        None => spans.push(Span::styled("counting…", theme.dim())),
        Some(counts) => state_spans(theme, counts, &mut spans),
    }
    spans
}

/// Each state with its count (`≈` when estimated), stale reservations, and
/// words outside the contract as the ledger spells them.
fn state_spans(theme: Theme, counts: &StateCounts, spans: &mut Vec<Span<'static>>) {
    for state in State::KNOWN.iter() {
        let n = counts.get(state);
        if n == 0 {
            continue;
        }
        spans.push(Span::styled(state.to_string(), theme.state(state)));
        let approx = if counts.is_estimate(state) { "≈" } else { "" };
        spans.push(Span::raw(format!(" {approx}{n} ")));
        if *state == State::Reserved && counts.stale_reserved > 0 {
            spans.push(Span::styled(
                format!("(stale {}) ", counts.stale_reserved),
                theme.dim(),
            ));
        }
    }
    for (state, n) in counts
        .by_state
        .iter()
        .filter(|(s, _)| matches!(s, State::Unrecognized(_)))
    {
        let approx = if counts.is_estimate(state) { "≈" } else { "" };
        spans.push(Span::styled(clean(state.as_str()), theme.state(state)));
        spans.push(Span::raw(format!(" {approx}{n} ")));
    }
    if counts.total == 0 {
        spans.push(Span::styled("no operations", theme.dim()));
    }
}
