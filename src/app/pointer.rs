//! The mouse, placed on the screen's geometry ([`layout::Screen::spot`]):
//! a click on a tab shows its view and a click on a list's row selects
//! it; the wheel scrolls the detail when it turns over the detail, else
//! the list. Pure, like every handler: the intent carries the cell, the
//! model knows the screen's size. A popup (the form, help) takes no
//! mouse, since what lies under it is not what the operator looks at, and
//! neither does the export's prompt, which waits for its file name.

use super::effect::Effect;
use super::layout::{self, Spot};
use super::model::{App, Mode};
use super::navigation::{move_cursor, scroll_detail, show_view};

fn takes_the_mouse(app: &App) -> bool {
    matches!(app.mode, Mode::Normal | Mode::Filter)
}

pub(super) fn click(app: &mut App, column: u16, row: u16) -> Vec<Effect> {
    if !takes_the_mouse(app) {
        return Vec::new();
    }
    match app.screen().spot(column, row) {
        Spot::Tabs(x) => match layout::tab_at(&app.tab_labels(), x) {
            Some(view) => show_view(app, view),
            None => Vec::new(),
        },
        Spot::ListRow(offset) => match app.cursor(app.pane()).to_shown(offset) {
            Some(delta) => move_cursor(app, delta),
            None => Vec::new(),
        },
        Spot::Detail | Spot::Elsewhere => Vec::new(),
    }
}

pub(super) fn wheel(app: &mut App, column: u16, row: u16, lines: isize) -> Vec<Effect> {
    if !takes_the_mouse(app) {
        return Vec::new();
    }
    match app.screen().spot(column, row) {
        Spot::Detail => scroll_detail(app, lines > 0),
        Spot::Tabs(_) | Spot::ListRow(_) | Spot::Elsewhere => move_cursor(app, lines),
    }
}
