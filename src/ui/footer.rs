//! The two bottom lines: the status line (messages, refusals, the filter
//! being typed and its parse error, the export's file name) and key hints
//! from the keymap.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::draw::clean;
use super::theme::Theme;
use crate::app::{App, Intent, ListState, Mode, View};
use crate::console::input::intent::KeyMode;
use crate::domain::{DecisionKind, TRIGRAM, TextSearch};

pub fn render(app: &App, theme: Theme, frame: &mut Frame, status: Rect, hints_area: Rect) {
    let line = match (&app.mode, app.current_list()) {
        (Mode::Export { .. }, list) => export_prompt(app, list, theme),
        (Mode::Filter, Some(list)) => {
            let mut spans = vec![
                Span::styled("/", theme.key()),
                Span::raw(format!("{}▏", clean(&list.filter_text))),
            ];
            if let Some(e) = &list.filter_error {
                spans.push(Span::styled(format!("  {}", clean(e)), theme.error()));
            }
            Line::from(spans)
        }
        (Mode::Filter, None) if app.view == View::Drills => Line::from(vec![
            Span::styled("/", theme.key()),
            Span::raw(format!("{}▏", clean(&app.drills.filter_text))),
            Span::styled("  case, strategy, verdict or run", theme.dim()),
        ]),
        _ => match (&app.status, scan_progress(app)) {
            // How far a filter read without an index got, unless
            // something went wrong.
            (s, Some(progress)) if s.as_ref().is_none_or(|s| !s.error) => {
                Line::styled(why_scanning(app, &progress), theme.dim())
            }
            (Some(s), _) => Line::styled(
                clean(&s.text),
                if s.error {
                    theme.error()
                } else {
                    Style::default()
                },
            ),
            (None, _) => quiet_line(app, theme),
        },
    };
    let too_long = line.width() > usize::from(status.width);
    frame.render_widget(Paragraph::new(line), status);
    if too_long && let Some(s) = app.status.as_ref().filter(|s| s.error) {
        alert(theme, frame, status, &s.text);
    }

    let offered = offered(&app.mode);
    let actions: Vec<Intent> = offered
        .iter()
        .copied()
        .filter(|a| *a != Intent::Help && advertised(app, app.mode.key_mode(), *a))
        .collect();
    let mut spans = Vec::new();
    if app.read_only() && app.mode == Mode::Normal && app.view.lists_operations() {
        spans.push(Span::styled("read-only: no decisions  ", theme.dim()));
    }
    let hints = app.keymap.hints(app.mode.key_mode(), app.view, &actions);
    let help = offered
        .contains(&Intent::Help)
        .then(|| {
            app.keymap
                .hints(app.mode.key_mode(), app.view, &[Intent::Help])
        })
        .and_then(|h| h.into_iter().next());
    let room = usize::from(hints_area.width).saturating_sub(Line::from(spans.clone()).width());
    let (shown, cut) = fit(&hints, help.as_ref().map(|(k, _)| k.as_str()), room);
    for (key, what) in shown {
        spans.push(Span::styled(key.clone(), theme.key()));
        spans.push(Span::styled(format!(" {what}  "), theme.dim()));
    }
    if let Some((key, _)) = help {
        spans.push(Span::styled(key, theme.key()));
        spans.push(Span::styled(
            if cut { " more" } else { " help" },
            theme.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), hints_area);
}

/// The hints that fit whole in `room` columns, taken in rank order, with
/// room kept for the help key at the end (it leads to every key left
/// out); and whether any was left out. A hint is never cut, and the rank
/// holds: once one does not fit, none after it is shown (a shorter, rarer
/// key in its place would make the footer change order with the width).
fn fit<'h>(
    hints: &'h [(String, &'static str)],
    help_key: Option<&str>,
    room: usize,
) -> (Vec<&'h (String, &'static str)>, bool) {
    // "KEY what" and the two spaces after it.
    let width = |key: &str, what: &str| Line::raw(format!("{key} {what}  ")).width();
    // The help hint ends the line: no spaces after it.
    let help = help_key.map_or(0, |k| Line::raw(format!("{k} more")).width());
    let mut left = room.saturating_sub(help);
    let mut shown = Vec::new();
    for hint in hints {
        let w = width(&hint.0, hint.1);
        if w > left {
            break;
        }
        left -= w;
        shown.push(hint);
    }
    let cut = shown.len() < hints.len();
    (shown, cut)
}

/// The keys the footer offers in `mode`, ranked: the ones used most come
/// first and are the last to go when the terminal is narrow (those that do
/// not act in the view are left out by [`advertised`]). Help is not ranked:
/// it always closes the footer, since it lists every key left out.
fn offered(mode: &Mode) -> Vec<Intent> {
    match mode {
        Mode::Normal => vec![
            Intent::Help,
            Intent::ToggleDetail,
            Intent::StartFilter,
            Intent::CompareRuns,
            Intent::OpenOperation,
            Intent::Decide(DecisionKind::Applied),
            Intent::Decide(DecisionKind::NotApplied),
            Intent::Decide(DecisionKind::RetrySameKey),
            Intent::ToggleMark,
            Intent::Decide(DecisionKind::CancelRetry),
            Intent::Undo,
            Intent::Probe,
            Intent::Export,
            Intent::CycleSort,
            Intent::Drill,
            Intent::Quit,
        ],
        Mode::Filter => vec![Intent::Accept, Intent::Back, Intent::DeleteChar],
        Mode::Form(_) => vec![
            Intent::Confirm,
            Intent::Back,
            Intent::NextField,
            Intent::ToggleOverride,
            Intent::Help,
        ],
        Mode::Help { .. } => vec![Intent::Back],
        Mode::Export { .. } => vec![Intent::Confirm, Intent::Back, Intent::DeleteChar],
    }
}

/// `export to NAME▏  12 marked rows`: the name being typed and which rows
/// Enter writes.
fn export_prompt<'a>(app: &App, list: Option<&ListState>, theme: Theme) -> Line<'a> {
    let rows = match list {
        Some(l) if !l.marks.is_empty() => format!("{} marked rows", l.marks.len()),
        Some(l) => match l.count {
            Some(n) => format!("all {}{n} matching rows", app.approx(l)),
            None => "every matching row".to_string(),
        },
        None => "every decision".to_string(),
    };
    Line::from(vec![
        Span::styled("export to ", theme.key()),
        Span::raw(format!("{}▏", clean(app.export_name()))),
        Span::styled(format!("  {rows}, as .csv or .jsonl"), theme.dim()),
    ])
}

/// Whether a key for `intent` read in `mode` belongs in the footer and
/// help: in the list it acts in the view on screen (`Intent::acts_in`,
/// which `update` obeys too) and, read-only, it records nothing (it would
/// only say "read-only").
pub(super) fn advertised(app: &App, mode: KeyMode, intent: Intent) -> bool {
    let acts = mode != KeyMode::List || intent.acts_in(app.view);
    acts && !(app.read_only() && intent.decides())
}

/// An error too long for the status line, whole, in a box just above it:
/// a refusal's reason and a conflict's "who and what now" must be read in
/// full. It goes at the next key press (see `app::update`).
fn alert(theme: Theme, frame: &mut Frame, status: Rect, text: &str) {
    let inner = usize::from(status.width.saturating_sub(2)).max(1);
    let rows = u16::try_from(clean(text).chars().count().div_ceil(inner)).unwrap_or(u16::MAX);
    let height = (rows + 2).min(status.y);
    let area = Rect::new(status.x, status.y - height, status.width, height);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(clean(text))
            .style(theme.error())
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" error · your next key dismisses it ")),
        area,
    );
}

use ratatui::style::Style;
use ratatui::widgets::{Block, Clear, Wrap};

/// How far the scan of the list on screen got, while one runs.
fn scan_progress(app: &App) -> Option<String> {
    app.current_list()?.scan?.progress()
}

/// Whether `list` is filtered by `err:` or free text on a ledger where no
/// index will serve them (where no index is built yet, the scan says so).
fn unindexed_text(app: &App, list: &ListState) -> bool {
    !app.reading.filters_scan
        && app.reading.text_search == TextSearch::Unindexed
        && (!list.query.errors.is_empty() || !list.query.text.is_empty())
}

/// The status line when nothing is said: the filter's error, or that the
/// text terms have no index here.
fn quiet_line(app: &App, theme: Theme) -> Line<'static> {
    match app.current_list() {
        Some(ListState {
            filter_error: Some(e),
            ..
        }) => Line::styled(format!("filter: {}", clean(e)), theme.error()),
        // No index on the service's tables for them: one would
        // tax every write the service makes.
        Some(l) if unindexed_text(app, l) => Line::styled(
            "err: and free text have no index on this ledger: read row by row",
            theme.dim(),
        ),
        _ => Line::raw(""),
    }
}

/// How far a filter read without an index got, and why it has none.
fn why_scanning(app: &App, progress: &str) -> String {
    if app.reading.filters_scan && app.adopting().is_some() {
        format!("{progress}; the indexes come with the read model being built")
    } else if app.reading.filters_scan {
        format!("{progress}; `settle adopt` adds the indexes")
    } else {
        format!("{progress}; free text and err: under {TRIGRAM} chars have no index")
    }
}
