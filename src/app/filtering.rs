//! The filter of an operation list: typing it live, re-running the query,
//! clearing it. A filter that does not parse keeps the last good query.
//!
//! Where the ledger has no index for filters yet ([`super::reading::Reading::filters_scan`]),
//! a filter is read a slice of ids at a time, newest first: the old rows
//! go at once, the list fills in as each slice answers and stops asking
//! once the screen is full, paging down goes on from where it stopped,
//! and a new filter (or Esc, or quitting) replaces the slice being read,
//! which the reader interrupts.

use super::effect::{Effect, PageSource, ScanRead, Ticket};
use super::model::{App, ListState, Mode};
use super::pane::{ListId, Pane};
use super::scan::ListScan;
use super::window::{Fetch, Merge, PAGE, Window};
use crate::domain::{OperationRow, Sort};
use crate::query::Query;
use crate::store::{STEP_IDS, ScanPlace};

pub(super) fn start_filter(app: &mut App) -> Vec<Effect> {
    if app.pane().list().is_some() || app.pane() == Pane::Drills {
        app.mode = Mode::Filter;
        // `*` selected what the old filter matched: a new one must not
        // inherit it unseen.
        return app.drop_selection();
    }
    Vec::new()
}

/// Types `c` into the filter, or deletes its last character when `None`.
pub(super) fn edit_filter(app: &mut App, c: Option<char>) -> Vec<Effect> {
    if app.pane() == Pane::Drills {
        app.drills.edit_filter(c);
        return Vec::new();
    }
    let Some(id) = app.pane().list() else {
        return Vec::new();
    };
    let list = app.list_mut(id);
    match c {
        Some(c) => list.filter_text.push(c),
        None => {
            list.filter_text.pop();
        }
    }
    requery(app, id)
}

/// Re-runs the list's query after the filter text changed. A filter that
/// does not parse keeps the list as it was and says why.
pub(super) fn requery(app: &mut App, id: ListId) -> Vec<Effect> {
    let list = app.list_mut(id);
    match Query::parse(&list.filter_text) {
        Ok(parsed) => {
            list.filter_error = None;
            list.query = list.base.clone().and(parsed);
            list.marks.clear();
            list.count = None;
            let mut effects = read_from_start(app, id);
            // A scanned filter is counted by its scan: the counter would
            // only count the states again, on every key typed (a whole
            // ledger read where it has no index).
            if app.list(id).scan.is_none() {
                effects.push(app.count_request());
            }
            effects
        }
        Err(e) => {
            list.filter_error = Some(e.to_string());
            Vec::new()
        }
    }
}

pub(super) fn clear_filter(app: &mut App) -> Vec<Effect> {
    if app.pane() == Pane::Drills {
        app.drills.clear_filter();
        return Vec::new();
    }
    let Some(id) = app.pane().list() else {
        return Vec::new();
    };
    let list = app.list_mut(id);
    if list.filter_text.is_empty() && list.filter_error.is_none() {
        return Vec::new();
    }
    list.filter_text.clear();
    requery(app, id)
}

/// Whether `id`'s filter is read by a scan: the ledger has no index for
/// filters (or none for one of its text terms), the operator filtered,
/// and the list is newest first, the order a scan walks.
fn scans(app: &App, id: ListId) -> bool {
    let list = app.list(id);
    (app.reading.filters_scan || app.reading.scans_text(&list.query))
        && list.query != list.base
        && list.window.sort == Sort::default()
}

/// Reads `id` from its first row for its query: a scan where the ledger
/// has no index for the filter. A filter read in another order without
/// an index may take long too: the old filter's rows go at once rather
/// than stand under the new one's name.
pub(super) fn read_from_start(app: &mut App, id: ListId) -> Vec<Effect> {
    let pane = Pane::Operations(id);
    if scans(app, id) {
        let list = app.list_mut(id);
        list.scan = Some(ListScan::default());
        list.window = Window {
            sort: list.window.sort,
            at_end: false,
            ..Window::default()
        };
        let source = PageSource::Scan {
            list: id,
            query: list.query.clone(),
            read: ScanRead::Step(None),
        };
        let merge = Merge::Replace { keep: None };
        return vec![app.page_request(pane, source, Fetch::First, merge, PAGE)];
    }
    let filters_scan = app.reading.filters_scan;
    let list = app.list_mut(id);
    list.scan = None;
    if filters_scan && list.query != list.base {
        list.window = Window {
            sort: list.window.sort,
            ..Window::default()
        };
    }
    app.load_page(pane, Fetch::First, Merge::Replace { keep: None }, PAGE)
        .into_iter()
        .collect()
}

/// The reader says whether filters are scans now (the ledger was adopted,
/// or its indexes were built): a filtered list that is read the other way
/// is read again from its start.
pub(super) fn filters_scan_changed(app: &mut App, now_scans: bool) -> Vec<Effect> {
    if app.reading.filters_scan == now_scans {
        return Vec::new();
    }
    app.reading.filters_scan = now_scans;
    let mut effects = Vec::new();
    for id in [ListId::Queue, ListId::All] {
        if app.list(id).scan.is_some() != scans(app, id) {
            effects.extend(read_from_start(app, id));
        }
    }
    effects.push(app.count_request());
    effects
}

/// A scan's slice (or reread) answered: its rows go in, and the scan goes
/// on while the list on screen has less than two screens of rows below
/// the cursor.
pub(super) fn scan_answered(
    app: &mut App,
    ticket: Ticket,
    merge: Merge,
    id: ListId,
    rows: Vec<OperationRow>,
    (read, place): (ScanRead, Option<ScanPlace>),
) -> Vec<Effect> {
    let height = app.visible_rows();
    let ListState { scan, window, .. } = app.list_mut(id);
    let Some(scan) = scan.as_mut() else {
        return Vec::new();
    };
    if ticket < window.generation {
        return Vec::new();
    }
    match (read, place) {
        // A slice from a place the scan has left was read twice.
        (ScanRead::Step(from), Some(place)) if from == scan.place => {
            scan.place = Some(place);
            scan.asked = false;
            scan.found += rows.len() as u64;
            if matches!(merge, Merge::Replace { .. }) {
                window.rows.clear();
                window.cursor = 0;
                window.top = 0;
            }
            window.extend(rows, place.done(), height);
        }
        (ScanRead::Reread(above, through), _) => {
            let added = window.replace_ids((above, through), rows, height);
            scan.found = scan.found.saturating_add_signed(added);
        }
        (ScanRead::Step(_), _) => return Vec::new(),
    }
    if app.pane() == Pane::Operations(id) {
        more(app, id).into_iter().collect()
    } else {
        Vec::new()
    }
}

/// The next slice of `id`'s scan, when it is not done and the list holds
/// less than two screens below the cursor.
fn more(app: &mut App, id: ListId) -> Option<Effect> {
    let height = app.visible_rows().max(1);
    let list = app.list(id);
    let place = list
        .scan
        .filter(|s| !s.asked)?
        .place
        .filter(|p| !p.done())?;
    let w = &list.window;
    if w.rows.len() > w.cursor + 2 * height {
        return None;
    }
    let source = PageSource::Scan {
        list: id,
        query: list.query.clone(),
        read: ScanRead::Step(Some(place)),
    };
    let pane = Pane::Operations(id);
    Some(app.page_request(pane, source, Fetch::First, Merge::Append, PAGE))
}

/// Another process wrote (or the operator asked to reread): the rows held
/// are read again by their id range, with any newer matches when the list
/// shows its newest rows; a range wider than two slices is left as the
/// scan found it and only the ids added since are read. The scan goes on
/// if the screen wants more.
pub(super) fn scan_refresh(app: &mut App, id: ListId) -> Vec<Effect> {
    let list = app.list(id);
    let Some(place) = list.scan.and_then(|s| s.place) else {
        // Its first slice is still being read.
        return Vec::new();
    };
    let w = &list.window;
    let newest = match (w.at_start, w.rows.first()) {
        (true, _) => i64::MAX,
        (false, Some(first)) => first.id.0,
        (false, None) => place.high,
    };
    let range = match (w.rows.first(), w.rows.last()) {
        (Some(first), Some(last)) if first.id.0 - last.id.0 <= 2 * STEP_IDS => {
            Some((last.id.0 - 1, newest))
        }
        (first, _) if w.at_start => {
            let above = first.map_or(place.high, |r| r.id.0.max(place.high));
            Some((above, i64::MAX))
        }
        _ => None,
    };
    let limit = w.rows.len() + PAGE;
    let query = list.query.clone();
    let mut effects = Vec::new();
    if let Some((above, through)) = range {
        let source = PageSource::Scan {
            list: id,
            query,
            read: ScanRead::Reread(above, through),
        };
        // Not a replacement: the slice being read goes on meanwhile.
        let pane = Pane::Operations(id);
        effects.push(app.page_request(pane, source, Fetch::First, Merge::Prepend, limit));
    }
    effects.extend(more(app, id));
    effects
}

/// A page failed: a slice asked for may have been it, so the next move
/// or reread asks again.
pub(super) fn page_failed(app: &mut App) {
    for id in [ListId::Queue, ListId::All] {
        if let Some(scan) = app.list_mut(id).scan.as_mut() {
            scan.asked = false;
        }
    }
}
