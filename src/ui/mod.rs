//! Drawing: a pure `render(&App, &mut Frame)`, one file per pane or popup.
//! It reads the model and never changes it; every string that came from a
//! ledger or a drill file passes through [`crate::text::sanitize`] here
//! before it reaches a span.

mod audit;
mod detail;
mod drills;
mod footer;
mod form;
mod header;
mod help;
mod list;
pub mod theme;

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};

use crate::app::{App, Mode, View};
use crate::domain::parse_time;
use theme::Theme;

pub fn render(app: &App, frame: &mut Frame) {
    let theme = Theme { color: app.color };
    let screen = app.screen();
    header::render(app, theme, frame, screen.header, screen.tabs);
    match app.view {
        View::Queue | View::All => {
            list::render(app, theme, frame, screen.list);
            if let Some(area) = screen.detail {
                detail::render(app, theme, frame, area);
            }
        }
        View::Audit => audit::render(app, theme, frame, screen.list),
        View::Drills => drills::render(app, theme, frame, screen.list),
    }
    footer::render(app, theme, frame, screen.status, screen.hints);
    if app.form.is_some() {
        form::render(app, theme, frame);
    }
    if app.mode == Mode::Help {
        help::render(app, theme, frame);
    }
}

/// Ledger text made safe for the terminal.
pub(crate) fn clean(text: &str) -> String {
    crate::text::sanitize(text).into_owned()
}

/// `45s`, `12m`, `3h`, `2d`: how long ago `time` was; `?` for a time that
/// does not parse.
pub(crate) fn age(time: &str, now: DateTime<Utc>) -> String {
    let Some(t) = parse_time(time) else {
        return "?".to_string();
    };
    duration((now - t).num_seconds())
}

/// A number of seconds, short: `-5s` for a time in the future.
pub(crate) fn duration(secs: i64) -> String {
    let (sign, s) = if secs < 0 { ("-", -secs) } else { ("", secs) };
    let text = match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    };
    format!("{sign}{text}")
}

/// A rectangle of at most `width` x `height` centred in `area`.
pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(row);
    cell
}

#[cfg(test)]
mod tests;
