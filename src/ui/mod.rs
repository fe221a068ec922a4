//! Drawing: a pure `render(&App, &mut Frame)`, one file per pane or popup.
//! It reads the model and never changes it; every string that came from a
//! ledger or a drill file passes through [`crate::text::sanitize`] here
//! before it reaches a span.

mod audit;
mod clusters;
mod detail;
mod draw;
mod drill_callers;
mod drill_case;
mod drill_compare;
mod drills;
mod footer;
mod form;
mod header;
mod help;
mod list;
pub(crate) mod theme;
mod timeline;

use ratatui::Frame;

use crate::app::{App, Mode, View};
use theme::Theme;

pub fn render(app: &App, frame: &mut Frame) {
    let theme = Theme { color: app.color };
    let screen = app.screen();
    header::render(app, theme, frame, screen.header, screen.tabs);
    match app.view {
        View::Queue | View::All => {
            if let Some(shown) = app.current_list() {
                let shown = list::Shown {
                    list: shown,
                    view: app.view,
                    approx: app.approx(shown),
                    now: app.now,
                };
                list::render(shown, theme, frame, screen.list);
            }
        }
        View::Audit => audit::render(&app.audit, theme, frame, screen.list),
        View::Drills => drills::render(&app.drills, theme, frame, screen.list),
        View::Clusters => clusters::render(&app.clusters, theme, frame, screen.list),
    }
    if let Some(area) = screen.detail {
        match app.view {
            View::Drills => drill_case::render(&app.drills, theme, frame, area),
            View::Queue | View::All | View::Audit | View::Clusters => {
                let ctx = detail::Context {
                    now: app.now,
                    drills: &app.drills,
                };
                detail::render(app.detail.as_ref(), ctx, theme, frame, area)
            }
        }
    }
    footer::render(app, theme, frame, screen.status, screen.hints);
    if let Some(decision) = app.form() {
        let writing = form::Writing {
            labels: &app.labels,
            operator: &app.operator,
            now: app.now,
            recording: app.recording.is_some(),
        };
        form::render(decision, writing, theme, frame);
    }
    if matches!(app.mode, Mode::Help { .. }) {
        help::render(app, theme, frame);
    }
}

#[cfg(test)]
mod tests;
