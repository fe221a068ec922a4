//! The slice of a long list the console holds: a buffer of rows fetched by
//! keyset pages around the cursor, the cursor and the first visible row.
//! Pure selection and scroll math; it asks for pages (returns a [`Fetch`]) but
//! never fetches them. A million rows cost the same as ten: the buffer never
//! grows past [`MAX_BUFFER`].

use crate::domain::{Sort, SortValue};

/// Where a page starts, by a row's place in the window's order: the window
/// serves operations and decisions alike; the shell maps the key to the
/// store's typed one.
pub type Fetch = crate::store::Seek<RowKey>;

/// A row's place in a sorted list: its value in the sort column, then its
/// plain id (which breaks ties, so a page boundary never skips a row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowKey {
    pub value: SortValue,
    pub id: i64,
}

impl RowKey {
    /// The key in a list ordered by id alone (the audit trail; the default
    /// operation order).
    pub fn id(id: i64) -> RowKey {
        RowKey {
            value: SortValue::Int(id),
            id,
        }
    }
}

/// Rows per page fetched from the store.
pub const PAGE: usize = 100;
/// Rows kept at most; a page arriving beyond it drops rows at the far end.
pub const MAX_BUFFER: usize = 3 * PAGE;

/// Anything with an id a window can page around.
pub trait Keyed {
    fn id(&self) -> i64;
    /// The row's place in `sort`'s order.
    fn key(&self, sort: Sort) -> RowKey;
}

impl Keyed for crate::domain::OperationRow {
    fn id(&self) -> i64 {
        self.id.0
    }
    fn key(&self, sort: Sort) -> RowKey {
        let key = sort.key_of(self);
        RowKey {
            value: key.value,
            id: key.id.0,
        }
    }
}

impl Keyed for crate::domain::Decision {
    fn id(&self) -> i64 {
        self.id.0
    }
    /// The audit trail has one order, newest first.
    fn key(&self, _sort: Sort) -> RowKey {
        RowKey::id(self.id.0)
    }
}

/// How a page that arrives is merged into the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Replace the buffer; keep the cursor on this id when it is still there.
    Replace { keep: Option<i64> },
    /// Add older rows after the buffer's last row.
    Append,
    /// Add newer rows before the buffer's first row.
    Prepend,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Window<T> {
    pub rows: Vec<T>,
    /// Index into `rows` of the selected row (0 when empty).
    pub cursor: usize,
    /// Index into `rows` of the first row on screen.
    pub top: usize,
    /// `rows[0]` is the newest matching row.
    pub at_start: bool,
    /// The last row is the oldest matching row.
    pub at_end: bool,
    /// The first page has arrived (distinguishes "loading" from "empty").
    pub loaded: bool,
    /// The ticket of the newest request that replaces the rows: a page
    /// answering an older request reads a filter or a position the
    /// operator has left, and is dropped.
    pub generation: u64,
    /// The order the rows are in (and pages are asked in).
    pub sort: Sort,
}

impl<T> Default for Window<T> {
    fn default() -> Self {
        Window {
            rows: Vec::new(),
            cursor: 0,
            top: 0,
            at_start: true,
            at_end: true,
            loaded: false,
            generation: 0,
            sort: Sort::default(),
        }
    }
}

impl<T: Keyed> Window<T> {
    pub fn selected(&self) -> Option<&T> {
        self.rows.get(self.cursor)
    }

    /// Moves the cursor by `delta` rows (clamped to the buffer) and keeps it
    /// on a screen of `height` rows. Returns the page to fetch when the cursor
    /// came within a screen of an edge that is not the list's end.
    pub fn move_by(&mut self, delta: isize, height: usize) -> Option<(Fetch, Merge)> {
        if self.rows.is_empty() {
            return None;
        }
        let last = self.rows.len() - 1;
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        self.scroll_to_cursor(height);
        self.page_needed(height)
    }

    /// The page to fetch so the cursor keeps a screen of rows beyond it.
    pub fn page_needed(&self, height: usize) -> Option<(Fetch, Merge)> {
        let margin = height.max(1);
        let last = self.rows.len().checked_sub(1)?;
        if !self.at_end && self.cursor + margin >= last {
            let key = self.rows.get(last)?.key(self.sort);
            return Some((Fetch::After(key), Merge::Append));
        }
        if !self.at_start && self.cursor < margin {
            let key = self.rows.first()?.key(self.sort);
            return Some((Fetch::Before(key), Merge::Prepend));
        }
        None
    }

    /// Keeps `top <= cursor < top + height`.
    pub fn scroll_to_cursor(&mut self, height: usize) {
        let height = height.max(1);
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + height {
            self.top = self.cursor + 1 - height;
        }
        let max_top = self.rows.len().saturating_sub(height);
        self.top = self.top.min(max_top).min(self.cursor);
    }

    /// Merges a page that arrived. `limit` is what was asked for: a shorter
    /// page means that end of the list was reached.
    pub fn merge(&mut self, seek: Fetch, merge: Merge, page: Vec<T>, limit: usize, height: usize) {
        let short = page.len() < limit;
        match merge {
            Merge::Replace { keep } => {
                let offset = self.cursor.saturating_sub(self.top);
                let old_cursor = self.cursor;
                self.rows = page;
                self.at_start =
                    matches!(seek, Fetch::First) || (matches!(seek, Fetch::Last) && short);
                self.at_end = matches!(seek, Fetch::Last) || short;
                self.cursor = match (keep, &seek) {
                    (_, Fetch::Last) => self.rows.len().saturating_sub(1),
                    (Some(id), _) => self
                        .rows
                        .iter()
                        .position(|r| r.id() == id)
                        .unwrap_or(old_cursor),
                    (None, _) => 0,
                };
                self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
                self.top = self.cursor.saturating_sub(offset);
            }
            Merge::Append => {
                // A page for an edge we no longer have (the buffer was
                // replaced meanwhile) is dropped rather than spliced wrongly.
                if !matches!(&seek, Fetch::After(key) if self.rows.last().is_some_and(|r| r.key(self.sort) == *key))
                {
                    return;
                }
                self.rows.extend(page);
                self.at_end = short;
                self.trim_start(height);
            }
            Merge::Prepend => {
                if !matches!(&seek, Fetch::Before(key) if self.rows.first().is_some_and(|r| r.key(self.sort) == *key))
                {
                    return;
                }
                let added = page.len();
                let mut rows = page;
                rows.append(&mut self.rows);
                self.rows = rows;
                self.cursor += added;
                self.top += added;
                self.at_start = short;
                if self.rows.len() > MAX_BUFFER {
                    let keep = MAX_BUFFER.max(self.cursor + height + 1);
                    if keep < self.rows.len() {
                        self.rows.truncate(keep);
                        self.at_end = false;
                    }
                }
            }
        }
        self.loaded = true;
        self.scroll_to_cursor(height);
    }

    /// Keeps the buffer within [`MAX_BUFFER`] after rows were added at its
    /// end, dropping from the start what is off screen.
    fn trim_start(&mut self, height: usize) {
        if self.rows.len() > MAX_BUFFER {
            let drop = (self.rows.len() - MAX_BUFFER).min(self.cursor.saturating_sub(height));
            self.rows.drain(..drop);
            self.cursor -= drop;
            self.top = self.top.saturating_sub(drop);
            if drop > 0 {
                self.at_start = false;
            }
        }
    }

    /// Adds the rows a scan found after the last one held (they are
    /// older, in the same order); `at_end` says whether the scan is done.
    pub fn extend(&mut self, rows: Vec<T>, at_end: bool, height: usize) {
        self.rows.extend(rows);
        self.at_end = at_end;
        self.loaded = true;
        self.trim_start(height);
        self.scroll_to_cursor(height);
    }

    /// Puts `rows` (newest first) in place of the held rows whose id lies
    /// above `above` and at most `through`, the cursor staying on its row
    /// when it is still there. Says how many rows that added (negative:
    /// removed).
    pub fn replace_ids(
        &mut self,
        (above, through): (i64, i64),
        rows: Vec<T>,
        height: usize,
    ) -> i64 {
        let keep = self.selected().map(Keyed::id);
        let before = self.rows.len() as i64;
        self.rows.retain(|r| r.id() <= above || r.id() > through);
        let at = self
            .rows
            .iter()
            .position(|r| r.id() <= above)
            .unwrap_or(self.rows.len());
        self.rows.splice(at..at, rows);
        if let Some(id) = keep {
            self.cursor = self
                .rows
                .iter()
                .position(|r| r.id() <= id)
                .unwrap_or(self.rows.len());
        }
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
        self.scroll_to_cursor(height);
        self.rows.len() as i64 - before
    }

    /// The request that rereads the rows on screen in place (live changes,
    /// reload, after a decision): from the top of the buffer, as many rows.
    pub fn refresh_request(&self) -> (Fetch, Merge, usize) {
        let keep = self.selected().map(Keyed::id);
        let limit = self.rows.len().max(PAGE);
        match self.rows.first() {
            Some(first) if !self.at_start => (
                Fetch::After(self.from(first)),
                Merge::Replace { keep },
                limit,
            ),
            _ => (Fetch::First, Merge::Replace { keep }, limit),
        }
    }

    /// Puts the rows in `sort`'s order: the request that reads them from
    /// the selected row on, the cursor staying on that row's operation.
    pub fn resort(&mut self, sort: Sort) -> (Fetch, Merge) {
        self.sort = sort;
        match self.selected() {
            Some(row) => (
                Fetch::After(self.from(row)),
                Merge::Replace {
                    keep: Some(row.id()),
                },
            ),
            None => (Fetch::First, Merge::Replace { keep: None }),
        }
    }

    /// The seek key just before `row` in the window's order, so a page
    /// "after" it starts with `row` itself.
    fn from(&self, row: &T) -> RowKey {
        let mut key = row.key(self.sort);
        key.id = if self.sort.descending {
            key.id.saturating_add(1)
        } else {
            key.id.saturating_sub(1)
        };
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Row(i64);
    impl Keyed for Row {
        fn id(&self) -> i64 {
            self.0
        }
        fn key(&self, _sort: Sort) -> RowKey {
            RowKey::id(self.0)
        }
    }

    /// Rows `from` down to `from - n + 1`, newest first like the store.
    fn rows(from: i64, n: usize) -> Vec<Row> {
        (0..n as i64).map(|i| Row(from - i)).collect()
    }

    #[test]
    fn moving_near_the_end_asks_for_the_next_page() {
        let mut w = Window::default();
        w.merge(
            Fetch::First,
            Merge::Replace { keep: None },
            rows(1000, PAGE),
            PAGE,
            20,
        );
        assert!(!w.at_end);
        assert_eq!(w.move_by(10, 20), None);
        let want = w.move_by(70, 20);
        assert_eq!(want, Some((Fetch::After(RowKey::id(901)), Merge::Append)));
        w.merge(
            Fetch::After(RowKey::id(901)),
            Merge::Append,
            rows(900, PAGE),
            PAGE,
            20,
        );
        assert_eq!(w.rows.len(), 2 * PAGE);
        assert_eq!(w.selected(), Some(&Row(920)));
    }

    #[test]
    fn the_buffer_stays_bounded_and_the_cursor_on_its_row() {
        let mut w = Window::default();
        w.merge(
            Fetch::First,
            Merge::Replace { keep: None },
            rows(10_000, PAGE),
            PAGE,
            20,
        );
        for _ in 0..50 {
            if let Some((seek, merge)) = w.move_by(20, 20) {
                let Fetch::After(key) = &seek else {
                    panic!("{seek:?}")
                };
                let from = key.id - 1;
                w.merge(seek, merge, rows(from, PAGE), PAGE, 20);
            }
        }
        assert!(w.rows.len() <= MAX_BUFFER);
        assert_eq!(w.selected(), Some(&Row(10_000 - 50 * 20)));
        assert!(!w.at_start);
    }

    #[test]
    fn refresh_keeps_the_cursor_on_the_same_id() {
        let mut w = Window::default();
        w.merge(
            Fetch::First,
            Merge::Replace { keep: None },
            rows(50, 50),
            PAGE,
            20,
        );
        w.move_by(5, 20);
        let (seek, merge, limit) = w.refresh_request();
        // Two new rows arrived at the top.
        w.merge(seek, merge, rows(52, 52), limit, 20);
        assert_eq!(w.selected(), Some(&Row(45)));
    }

    #[test]
    fn a_stale_append_is_dropped() {
        let mut w = Window::default();
        w.merge(
            Fetch::First,
            Merge::Replace { keep: None },
            rows(50, 10),
            10,
            5,
        );
        w.merge(
            Fetch::After(RowKey::id(7)),
            Merge::Append,
            rows(6, 3),
            10,
            5,
        );
        assert_eq!(w.rows.len(), 10);
    }

    proptest! {
        #[test]
        fn cursor_and_top_stay_in_bounds(
            n in 0usize..400,
            moves in proptest::collection::vec((-150isize..150, 1usize..60), 0..40),
        ) {
            let mut w = Window::default();
            w.merge(Fetch::First, Merge::Replace { keep: None }, rows(n as i64, n), n + 1, 10);
            for (delta, height) in moves {
                w.move_by(delta, height);
                prop_assert!(w.rows.is_empty() || w.cursor < w.rows.len());
                prop_assert!(w.top <= w.cursor);
                prop_assert!(w.cursor < w.top + height);
            }
        }
    }
}
