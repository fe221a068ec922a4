//! Drawing: a pure `render(&App, &mut Frame)`, one file per pane or popup.
//! It reads the model and never changes it; every string that came from a
//! ledger or a drill file passes through [`crate::text::sanitize`] here
//! before it reaches a span.

mod audit;
mod clusters;
mod detail;
mod drill_case;
mod drill_compare;
mod drills;
mod footer;
mod form;
mod header;
mod help;
mod list;
pub mod theme;

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};

use crate::app::{App, Mode, View};
use theme::Theme;

pub fn render(app: &App, frame: &mut Frame) {
    let theme = Theme { color: app.color };
    let screen = app.screen();
    header::render(app, theme, frame, screen.header, screen.tabs);
    match app.view {
        View::Queue | View::All => list::render(app, theme, frame, screen.list),
        View::Audit => audit::render(app, theme, frame, screen.list),
        View::Drills => drills::render(app, theme, frame, screen.list),
        View::Clusters => clusters::render(app, theme, frame, screen.list),
    }
    if let Some(area) = screen.detail {
        match app.view {
            View::Drills => drill_case::render(app, theme, frame, area),
            View::Queue | View::All | View::Audit | View::Clusters => {
                detail::render(app, theme, frame, area)
            }
        }
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

pub(crate) use crate::domain::{age, human_duration as duration};

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
