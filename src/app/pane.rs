//! What the view on screen scrolls through: one [`Pane`] (an operation
//! list, the audit trail, the drills or the clusters) and the one [`PaneCursor`] they all
//! answer to, so moving, jumping and rereading are one path for every view
//! instead of a branch per list (the `App` methods that pick a pane's
//! cursor and page request live in `model`). Pure: no loading here.

use super::window::{Fetch, Keyed, Merge, Window};
use crate::console::input::intent::View;

/// The two operation lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListId {
    Queue,
    All,
}

/// The content of a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Operations(ListId),
    Audit,
    Drills,
    Clusters,
}

impl Pane {
    pub fn of(view: View) -> Pane {
        match view {
            View::Queue => Pane::Operations(ListId::Queue),
            View::All => Pane::Operations(ListId::All),
            View::Audit => Pane::Audit,
            View::Drills => Pane::Drills,
            View::Clusters => Pane::Clusters,
        }
    }

    /// The operation list this pane shows, if it is one.
    pub fn list(self) -> Option<ListId> {
        match self {
            Pane::Operations(id) => Some(id),
            Pane::Audit | Pane::Drills | Pane::Clusters => None,
        }
    }
}

/// A cursor over a pane's content, whatever the rows are.
pub trait PaneCursor {
    /// Moves by `delta` rows on a screen `height` rows high; says which
    /// page to load when the move left the rows held.
    fn move_by(&mut self, delta: isize, height: usize) -> Option<(Fetch, Merge)>;
    /// Keeps the cursor on screen after the height or the rows changed.
    fn scroll_to_cursor(&mut self, height: usize);
    /// The request that rereads what is on screen in place; `None` for
    /// content that does not come from the ledger.
    fn refresh_request(&self) -> Option<(Fetch, Merge, usize)>;
    /// The move that puts the cursor on the `offset`th row on screen (0
    /// is the top one), the row a click landed on; `None` when no row is
    /// drawn there.
    fn to_shown(&self, offset: usize) -> Option<isize>;
}

/// The move from `cursor` to the `offset`th row drawn from `top`, in a
/// pane holding `len` rows.
pub fn to_shown(top: usize, cursor: usize, len: usize, offset: usize) -> Option<isize> {
    let row = top.checked_add(offset).filter(|row| *row < len)?;
    Some(row as isize - cursor as isize)
}

impl<T: Keyed> PaneCursor for Window<T> {
    fn move_by(&mut self, delta: isize, height: usize) -> Option<(Fetch, Merge)> {
        Window::move_by(self, delta, height)
    }

    fn scroll_to_cursor(&mut self, height: usize) {
        Window::scroll_to_cursor(self, height);
    }

    fn refresh_request(&self) -> Option<(Fetch, Merge, usize)> {
        Some(Window::refresh_request(self))
    }

    fn to_shown(&self, offset: usize) -> Option<isize> {
        to_shown(self.top, self.cursor, self.rows.len(), offset)
    }
}
