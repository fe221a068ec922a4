//! Where each pane goes for a terminal size. Pure geometry shared by
//! `update` (how many rows a page-down moves) and `render` (where to draw),
//! so the two cannot disagree.

use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// Width from which the detail sits beside the list instead of below it.
pub const SIDE_BY_SIDE_WIDTH: u16 = 140;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    pub header: Rect,
    pub tabs: Rect,
    pub list: Rect,
    pub detail: Option<Rect>,
    pub status: Rect,
    pub hints: Rect,
}

pub fn screen(area: Rect, detail_open: bool) -> Screen {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    let main = rows[2];
    let (list, detail) = if !detail_open {
        (main, None)
    } else if area.width >= SIDE_BY_SIDE_WIDTH {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
            .split(main);
        (cols[0], Some(cols[1]))
    } else {
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
            .split(main);
        (parts[0], Some(parts[1]))
    };
    Screen {
        header: rows[0],
        tabs: rows[1],
        list,
        detail,
        status: rows[3],
        hints: rows[4],
    }
}

/// Rows of data a list pane shows: its height less the borders and the
/// column header.
pub fn list_rows(list: Rect) -> usize {
    usize::from(list.height.saturating_sub(3)).max(1)
}
