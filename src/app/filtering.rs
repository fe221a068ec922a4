//! The filter of an operation list: typing it live, re-running the query,
//! clearing it. A filter that does not parse keeps the last good query.

use super::effect::Effect;
use super::model::{App, Mode};
use super::pane::{ListId, Pane};
use super::window::{Fetch, Merge, PAGE};
use crate::query::Query;

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
            let pane = Pane::Operations(id);
            app.load_page(pane, Fetch::First, Merge::Replace { keep: None }, PAGE)
                .into_iter()
                .chain([app.count_request()])
                .collect()
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
