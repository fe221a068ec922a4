//! The mouse to intents, beside the keymap: a left press is a click and
//! the wheel scrolls, each at the cell it happened on; the model decides
//! what is there (`app::layout`). Moves, drags, releases and the other
//! buttons mean nothing, so they never wake the console. Depends on
//! `intent` alone. Holding Shift is the terminal's own: xterm-compatible
//! terminals then select text instead of reporting the mouse.

use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use crate::console::input::intent::Intent;

/// Lines one notch of the wheel scrolls, as most terminals scroll.
pub const WHEEL_LINES: isize = 3;

/// What a mouse event means, if anything.
pub fn intent(event: &MouseEvent) -> Option<Intent> {
    let (column, row) = (event.column, event.row);
    let wheel = |lines| Intent::Wheel { column, row, lines };
    match event.kind {
        MouseEventKind::Down(MouseButton::Left) => Some(Intent::Click { column, row }),
        MouseEventKind::ScrollDown => Some(wheel(WHEEL_LINES)),
        MouseEventKind::ScrollUp => Some(wheel(-WHEEL_LINES)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn at(kind: MouseEventKind) -> Option<Intent> {
        intent(&MouseEvent {
            kind,
            column: 7,
            row: 4,
            modifiers: KeyModifiers::NONE,
        })
    }

    #[test]
    fn a_left_press_clicks_and_the_wheel_scrolls_where_they_happen() {
        assert_eq!(
            at(MouseEventKind::Down(MouseButton::Left)),
            Some(Intent::Click { column: 7, row: 4 })
        );
        assert_eq!(
            at(MouseEventKind::ScrollDown),
            Some(Intent::Wheel {
                column: 7,
                row: 4,
                lines: 3
            })
        );
        assert_eq!(
            at(MouseEventKind::ScrollUp),
            Some(Intent::Wheel {
                column: 7,
                row: 4,
                lines: -3
            })
        );
    }

    #[test]
    fn moves_drags_releases_and_other_buttons_mean_nothing() {
        for kind in [
            MouseEventKind::Moved,
            MouseEventKind::Drag(MouseButton::Left),
            MouseEventKind::Up(MouseButton::Left),
            MouseEventKind::Down(MouseButton::Right),
            MouseEventKind::Down(MouseButton::Middle),
            MouseEventKind::ScrollLeft,
        ] {
            assert_eq!(at(kind), None, "{kind:?}");
        }
    }
}
