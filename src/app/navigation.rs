//! Moving around: views, the cursor of whichever pane is on screen, the
//! detail that follows it, Esc stepping back, and rereading what is shown.
//! Pure: returns the loads it needs as effects.

use super::clusters::filter_term;
use super::effect::{Count, Effect, Read, Ticket};
use super::filtering::{clear_filter, read_from_start, requery, scan_refresh};
use super::model::{App, DetailPane, FormSlot, Mode};
use super::pane::{ListId, Pane};
use super::window::{Fetch, Merge, PAGE};
use crate::console::input::intent::View;
use crate::domain::{CatchUp, ClusterDimension, Sort};

pub(super) fn show_view(app: &mut App, view: View) -> Vec<Effect> {
    let mut effects = leaving(app, view);
    app.view = view;
    app.mode = Mode::Normal;
    effects.extend(refresh(app));
    effects
}

/// What leaving the view on screen for `next` stops: the Clusters view's
/// grouping, which nobody would see.
fn leaving(app: &App, next: View) -> Vec<Effect> {
    if app.view == View::Clusters && next != View::Clusters {
        vec![Effect::Count(Count::StopGrouping)]
    } else {
        Vec::new()
    }
}

/// Tab and shift-Tab: the next or previous view, wrapping around.
pub(super) fn cycle_view(app: &mut App, forward: bool) -> Vec<Effect> {
    let at = View::ALL.iter().position(|v| *v == app.view).unwrap_or(0);
    let n = View::ALL.len();
    let next = if forward {
        (at + 1) % n
    } else {
        (at + n - 1) % n
    };
    show_view(app, View::ALL[next])
}

/// Another process committed: rereads what is on screen, unless a reread
/// is already under way, in which case one more follows when it answers.
/// A service committing every few milliseconds thus costs one reread at a
/// time, never a queue of them.
pub(super) fn ledger_changed(app: &mut App) -> Vec<Effect> {
    app.last_change = Some(app.now);
    if app.refresh.in_flight.is_some() {
        app.refresh.pending = true;
        return Vec::new();
    }
    let effects = refresh(app);
    app.refresh.in_flight = effects.iter().find_map(|e| match e {
        Effect::Read(Read::LoadPage { ticket, .. }) => Some(*ticket),
        _ => None,
    });
    effects
}

/// The reader says how far the read model is behind: once it has caught
/// up, what is on screen is read again, as it may miss what it had not
/// read yet.
pub(super) fn catching_up(app: &mut App, progress: Option<CatchUp>) -> Vec<Effect> {
    let was = std::mem::replace(&mut app.reading.catching_up, progress);
    if was.is_some() && progress.is_none() {
        return refresh(app);
    }
    Vec::new()
}

/// A page answered (or failed): when it is the reread under way or newer
/// (a newer request reads the newer ledger too), that reread is done, and
/// the commits that arrived meanwhile get theirs.
pub(super) fn page_answered(app: &mut App, ticket: Ticket) -> Vec<Effect> {
    if app.refresh.in_flight.is_none_or(|t| ticket < t) {
        return Vec::new();
    }
    app.refresh.in_flight = None;
    if std::mem::take(&mut app.refresh.pending) {
        return ledger_changed(app);
    }
    Vec::new()
}

/// Rereads what is on screen in place: the pane's rows, the detail, and
/// the counts.
pub(super) fn refresh(app: &mut App) -> Vec<Effect> {
    let pane = app.pane();
    let mut effects = match pane.list() {
        Some(id) if app.list(id).scan.is_some() => scan_refresh(app, id),
        _ => {
            let request = app.cursor(pane).refresh_request();
            request
                .and_then(|(fetch, merge, limit)| app.load_page(pane, fetch, merge, limit))
                .into_iter()
                .collect()
        }
    };
    if app.detail_open
        && app.view.shows_detail()
        && let Some(pane) = &app.detail
    {
        effects.push(Effect::Read(Read::LoadDetail(pane.id)));
    }
    effects.push(app.count_request());
    // Grouping reads the whole queue: only while the view is shown.
    if app.pane() == Pane::Clusters {
        effects.push(app.clusters_request());
    }
    effects
}

pub(super) fn move_cursor(app: &mut App, delta: isize) -> Vec<Effect> {
    let height = app.visible_rows();
    let pane = app.pane();
    let wanted = app.cursor_mut(pane).move_by(delta, height);
    let mut effects: Vec<Effect> = wanted
        .and_then(|(fetch, merge)| app.load_page(pane, fetch, merge, PAGE))
        .into_iter()
        .collect();
    effects.extend(follow_cursor(app, false));
    effects
}

/// Home and End: the newest or oldest page, cursor on its first row.
/// `s` and `S` on an operation list: its rows in another order, read from
/// the selected operation on so the cursor stays on it.
pub(super) fn resort(app: &mut App, change: impl FnOnce(Sort) -> Sort) -> Vec<Effect> {
    let Pane::Operations(list) = app.pane() else {
        return Vec::new();
    };
    let window = &mut app.list_mut(list).window;
    let sort = change(window.sort);
    let (fetch, merge) = window.resort(sort);
    // Without an index a filter is scanned newest first, or read whole in
    // another order: either way from its start.
    if app.reading.filters_scan && app.list(list).query != app.list(list).base {
        return read_from_start(app, list);
    }
    app.load_page(Pane::Operations(list), fetch, merge, PAGE)
        .into_iter()
        .collect()
}

pub(super) fn jump(app: &mut App, fetch: Fetch) -> Vec<Effect> {
    let pane = app.pane();
    let to_top = matches!(fetch, Fetch::First);
    // A scanned filter's newest rows are held, or read again by a new
    // scan; its oldest are where the scan goes on.
    if let Some(id) = pane.list()
        && app.list(id).scan.is_some()
    {
        return if !to_top {
            move_cursor(app, isize::MAX)
        } else if app.list(id).window.at_start {
            move_cursor(app, isize::MIN)
        } else {
            read_from_start(app, id)
        };
    }
    match app.load_page(pane, fetch, Merge::Replace { keep: None }, PAGE) {
        Some(effect) => vec![effect],
        // A pane that holds all its rows (Drills) moves to its end.
        None if to_top => move_cursor(app, isize::MIN),
        None => move_cursor(app, isize::MAX),
    }
}

/// Keeps the detail pane on the cursor's operation.
pub(super) fn follow_cursor(app: &mut App, force: bool) -> Vec<Effect> {
    // A view without a detail (Drills) leaves the pane as it was, for when
    // the operator comes back.
    if !app.detail_open || !app.view.shows_detail() {
        return Vec::new();
    }
    let Some(id) = app.selected_operation() else {
        app.detail = None;
        return Vec::new();
    };
    if !force && app.detail.as_ref().is_some_and(|d| d.id == id) {
        return Vec::new();
    }
    app.detail = Some(DetailPane {
        id,
        detail: None,
        scroll: 0,
    });
    vec![Effect::Read(Read::LoadDetail(id))]
}

pub(super) fn toggle_detail(app: &mut App) -> Vec<Effect> {
    if app.pane() == Pane::Clusters {
        return open_cluster(app);
    }
    if app.pane() == Pane::Drills {
        app.drills.toggle_case();
        return app.drills.link_request().into_iter().collect();
    }
    if !app.view.shows_detail() {
        return Vec::new();
    }
    app.detail_open = !app.detail_open;
    if app.detail_open {
        follow_cursor(app, true)
    } else {
        Vec::new()
    }
}

/// Enter on a group: the Queue, filtered to it. A group the filter
/// language cannot say (an age, no error) leaves everything as it was and
/// says why.
fn open_cluster(app: &mut App) -> Vec<Effect> {
    let Some(group) = app.clusters.selected() else {
        return Vec::new();
    };
    let (dimension, count) = (group.dimension, group.count);
    match filter_term(group) {
        Ok(term) => {
            // `err:` is any attempt's error, the group the last one's.
            let wider = if dimension == ClusterDimension::LastError {
                format!(" (any attempt's error: the group's {count} and maybe more)")
            } else {
                String::new()
            };
            app.info(format!("queue filtered to {term}{wider}"));
            let mut effects = leaving(app, View::Queue);
            app.view = View::Queue;
            app.mode = Mode::Normal;
            app.queue.filter_text = term;
            effects.extend(requery(app, ListId::Queue));
            effects
        }
        Err(why) => {
            app.error(why);
            Vec::new()
        }
    }
}

pub(super) fn scroll_detail(app: &mut App, down: bool) -> Vec<Effect> {
    if app.pane() == Pane::Drills {
        app.drills.scroll_detail(down);
        return Vec::new();
    }
    if let Some(d) = app.detail.as_mut().filter(|_| app.detail_open) {
        d.scroll = if down {
            d.scroll.saturating_add(3)
        } else {
            d.scroll.saturating_sub(3)
        };
    }
    Vec::new()
}

/// Esc: leaves help, cancels a form, clears the filter being typed; in the
/// list it closes the detail, then clears marks, then the filter.
pub(super) fn back(app: &mut App) -> Vec<Effect> {
    match &app.mode {
        Mode::Help { .. } => {
            if let Mode::Help { form } = std::mem::replace(&mut app.mode, Mode::Normal) {
                app.mode = form.map_or(Mode::Normal, Mode::Form);
            }
            Vec::new()
        }
        // A write under way cannot be taken back: Esc only hides the form,
        // the result shows on the status line.
        Mode::Form(FormSlot::Recording) => {
            app.mode = Mode::Normal;
            app.info("still recording; the result shows here");
            Vec::new()
        }
        Mode::Form(FormSlot::Editing(_)) => {
            // Esc before confirming drops an all-matching selection too,
            // and the reader stops judging its rows.
            let dropped = app.drop_selection();
            app.mode = Mode::Normal;
            app.info("cancelled: nothing recorded");
            dropped
        }
        Mode::Filter => {
            app.mode = Mode::Normal;
            clear_filter(app)
        }
        Mode::Export { .. } => {
            app.mode = Mode::Normal;
            app.info("export cancelled: nothing written");
            Vec::new()
        }
        Mode::Normal => {
            if app.pane() == Pane::Drills {
                app.drills.back();
                return Vec::new();
            }
            if app.detail_open {
                app.detail_open = false;
                return Vec::new();
            }
            if app.selection.is_some() {
                app.info("selection dropped");
                return app.drop_selection();
            }
            let Some(id) = app.pane().list() else {
                return Vec::new();
            };
            if !app.list(id).marks.is_empty() {
                app.list_mut(id).marks.clear();
                app.info("marks cleared");
                return Vec::new();
            }
            clear_filter(app)
        }
    }
}
