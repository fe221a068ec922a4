//! What every pane draws with: ledger text made safe, ages and durations
//! in words, a centred popup. A leaf: the panes import it, it imports no
//! pane.

use ratatui::layout::{Constraint, Flex, Layout, Rect};

/// Ledger text made safe for the terminal.
pub(super) fn clean(text: &str) -> String {
    crate::text::sanitize(text).into_owned()
}

pub(super) use crate::domain::{age, human_duration as duration};

/// A rectangle of at most `width` x `height` centred in `area`.
pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(row);
    cell
}
