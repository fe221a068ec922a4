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
        let badge = match app.access.unavailable().or(app.read_only_reason.as_deref()) {
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
    members(app, theme, &mut spans);
    // What is on screen is what the read model holds so far.
    if let Some(label) = app.reading.catching_up_label() {
        spans.push(Span::styled(format!(" · {label}"), theme.read_only()));
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
    frame.render_widget(
        Paragraph::new(Line::from(tab_spans(app, theme, usize::from(tabs.width)))),
        tabs,
    );
}

/// A group's ledgers, each with a mark: `●` read, `✕` not read (and
/// why, cut short), `ro` takes no decision, a percentage while its read
/// model catches up.
fn members(app: &App, theme: Theme, spans: &mut Vec<Span<'static>>) {
    for member in &app.members {
        let name = clean(&member.name);
        spans.push(Span::styled(" · ", theme.dim()));
        if let Some(why) = &member.down {
            let why: String = clean(why).chars().take(48).collect();
            spans.push(Span::styled(
                format!("{name} ✕ not read: {why}"),
                theme.error(),
            ));
            continue;
        }
        spans.push(Span::raw(name));
        spans.push(Span::styled(" ●", theme.live()));
        if member.read_only {
            spans.push(Span::styled(" read-only", theme.read_only()));
        }
        if let Some(c) = member.catching_up {
            let percent = (c.done * 100).checked_div(c.total).unwrap_or(100);
            spans.push(Span::styled(
                format!(" catching up {percent}%"),
                theme.read_only(),
            ));
        }
    }
}

/// The view tabs, each list's with its count, then the counts per state:
/// as many whole "state n" groups as fit in `width` (the queue's states
/// come first), then "+k more" for those left out, never a word cut.
fn tab_spans(app: &App, theme: Theme, width: usize) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (view, label) in app.tab_labels() {
        let style = if view == app.view {
            theme.selected()
        } else {
            theme.dim()
        };
        spans.push(Span::styled(label, style));
    }
    let groups = match &app.counts {
        None => vec![vec![Span::styled("counting…", theme.dim())]],
        Some(counts) => state_groups(theme, counts),
    };
    let separator = Span::raw(" │ ");
    let used: usize = spans.iter().map(Span::width).sum::<usize>() + separator.width();
    let room = width.saturating_sub(used);
    let fitting = fit(&groups, room);
    let more = format!("+{} more", groups.len() - fitting);
    if fitting == 0 && more.len() > room {
        // Not even the count of what is left out fits: the tabs alone.
        return spans;
    }
    spans.push(separator);
    spans.extend(groups.iter().take(fitting).flatten().cloned());
    if fitting < groups.len() {
        spans.push(Span::styled(more, theme.dim()));
    }
    spans
}

/// How many of `groups`, from the first, fit in `room` columns, leaving
/// room for the "+k more" that then follows.
fn fit(groups: &[Vec<Span<'static>>], room: usize) -> usize {
    let widths: Vec<usize> = groups
        .iter()
        .map(|g| g.iter().map(Span::width).sum())
        .collect();
    if widths.iter().sum::<usize>() <= room {
        return groups.len();
    }
    let mut used = 0;
    let mut n = 0;
    for (i, w) in widths.iter().enumerate() {
        let more = format!("+{} more", groups.len() - i - 1).len();
        if used + w + more > room {
            break;
        }
        used += w;
        n += 1;
    }
    n
}

/// Each state with its count (`≈` when estimated) and its stale
/// reservations, one group a state, then words outside the contract as the
/// ledger spells them.
fn state_groups(theme: Theme, counts: &StateCounts) -> Vec<Vec<Span<'static>>> {
    let mut groups = Vec::new();
    for state in State::KNOWN.iter() {
        let n = counts.get(state);
        if n == 0 {
            continue;
        }
        let approx = if counts.is_estimate(state) { "≈" } else { "" };
        let mut group = vec![
            Span::styled(state.to_string(), theme.state(state)),
            Span::raw(format!(" {approx}{n} ")),
        ];
        if *state == State::Reserved && counts.stale_reserved > 0 {
            group.push(Span::styled(
                format!("(stale {}) ", counts.stale_reserved),
                theme.dim(),
            ));
        }
        groups.push(group);
    }
    for (state, n) in counts
        .by_state
        .iter()
        .filter(|(s, _)| matches!(s, State::Unrecognized(_)))
    {
        let approx = if counts.is_estimate(state) { "≈" } else { "" };
        groups.push(vec![
            Span::styled(clean(state.as_str()), theme.state(state)),
            Span::raw(format!(" {approx}{n} ")),
        ]);
    }
    if counts.total == 0 {
        groups.push(vec![Span::styled("no operations", theme.dim())]);
    }
    groups
}
