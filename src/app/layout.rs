//! Where each pane goes for a terminal size. Pure geometry shared by
//! `update` (how many rows a page-down moves) and `render` (where to draw),
//! so the two cannot disagree; the mouse's clicks and wheel are placed on
//! the same geometry ([`Screen::spot`], [`tab_at`]).

use ratatui::layout::{Constraint, Direction, Layout, Position, Rect};
use unicode_width::UnicodeWidthStr;

use crate::console::input::intent::View;

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

/// What is under a cell of the screen, for the mouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    /// The tab bar, this many columns from its left edge.
    Tabs(u16),
    /// A data row of the list pane: the `n`th shown (0 is the top one).
    ListRow(usize),
    /// The detail pane, borders included.
    Detail,
    /// Anything else: the header, the list's borders and column titles,
    /// the status line and the footer.
    Elsewhere,
}

impl Screen {
    pub fn spot(&self, column: u16, row: u16) -> Spot {
        let at = Position::new(column, row);
        if self.tabs.contains(at) {
            return Spot::Tabs(column - self.tabs.x);
        }
        if self.detail.is_some_and(|d| d.contains(at)) {
            return Spot::Detail;
        }
        // Inside the borders, below the column titles: where `list_rows`
        // rows are drawn.
        let body = Rect::new(
            self.list.x.saturating_add(1),
            self.list.y.saturating_add(2),
            self.list.width.saturating_sub(2),
            self.list.height.saturating_sub(3),
        );
        if body.contains(at) {
            return Spot::ListRow(usize::from(row - body.y));
        }
        Spot::Elsewhere
    }
}

/// The view whose tab covers `column` columns from the tab bar's left
/// edge, given the tabs' labels in the order they are drawn.
pub fn tab_at(labels: &[(View, String)], column: u16) -> Option<View> {
    let column = usize::from(column);
    let mut left = 0;
    for (view, label) in labels {
        let right = left + label.width();
        if (left..right).contains(&column) {
            return Some(*view);
        }
        left = right;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_a_tab_a_list_row_the_detail_or_nothing() {
        // 100x30, detail below the list: list rows 2..14, detail 14..28.
        let s = screen(Rect::new(0, 0, 100, 30), true);
        assert_eq!(s.spot(5, 0), Spot::Elsewhere, "header");
        assert_eq!(s.spot(5, 1), Spot::Tabs(5));
        assert_eq!(s.spot(5, 2), Spot::Elsewhere, "the list's top border");
        assert_eq!(s.spot(5, 3), Spot::Elsewhere, "the column titles");
        assert_eq!(s.spot(5, 4), Spot::ListRow(0));
        assert_eq!(s.spot(0, 4), Spot::Elsewhere, "the list's left border");
        let last = s.list.bottom() - 2;
        assert_eq!(s.spot(5, last), Spot::ListRow(list_rows(s.list) - 1));
        assert_eq!(s.spot(5, last + 1), Spot::Elsewhere, "bottom border");
        assert_eq!(s.spot(5, s.list.bottom()), Spot::Detail);
        assert_eq!(s.spot(5, 29), Spot::Elsewhere, "footer");
    }

    #[test]
    fn a_tab_covers_its_label_s_width() {
        let labels = [
            (View::Queue, " 1 Queue ≈5 ".to_string()),
            (View::All, " 2 All ".to_string()),
        ];
        assert_eq!(tab_at(&labels, 0), Some(View::Queue));
        // `≈` is one column wide, though three bytes long.
        assert_eq!(tab_at(&labels, 11), Some(View::Queue));
        assert_eq!(tab_at(&labels, 12), Some(View::All));
        assert_eq!(tab_at(&labels, 18), Some(View::All));
        assert_eq!(tab_at(&labels, 19), None);
    }
}
