//! What ties the Drills view to the rest of the console: the comparison
//! toggle, a case's link to the operation an import wrote (asked of the
//! reader, answered with [`Msg::DrillCaseFound`](super::Msg)), the jump
//! to it in the All view, and drill files arriving from a watched folder.
//! Pure like the rest of `app`: the lookup and the reading are effects.

use super::files::CaseKey;
use super::files::LoadedDrill;
use crate::app::effect::{Effect, Read};
use crate::app::filtering::requery;
use crate::app::model::{App, DetailPane, Mode};
use crate::app::pane::ListId;
use crate::console::input::intent::View;
use crate::domain::OperationId;

/// `v`: the comparison across runs, or back to the cases.
pub(crate) fn compare_runs(app: &mut App) -> Vec<Effect> {
    if let Err(why) = app.drills.toggle_compare() {
        app.error(why);
    }
    Vec::new()
}

/// `o` on an open case: its operation in the All view, with its detail.
pub(crate) fn open_operation(app: &mut App) -> Vec<Effect> {
    let pane = &app.drills;
    let Some(row) = pane.selected().filter(|_| pane.open) else {
        app.error("open a drill case first (enter)");
        return Vec::new();
    };
    let key = pane
        .files
        .get(row.file)
        .zip(row.case)
        .and_then(|(f, c)| f.import_keys().get(c).cloned());
    let (id, key) = match (pane.link(row), key) {
        (Some(Some(id)), Some(key)) => (id, key),
        (None, Some(_)) => {
            app.info("still looking for this case in the ledger");
            return Vec::new();
        }
        _ => {
            app.error(
                "this case is not in the ledger: settle drill import FILE LEDGER brings it in",
            );
            return Vec::new();
        }
    };
    app.view = View::All;
    app.mode = Mode::Normal;
    // The filter shows the operator why the list holds this one row, and
    // Esc gives the whole list back.
    app.all.filter_text = format!(
        "account:{} type:{} key:{}",
        quoted(&key.account),
        quoted(&key.op_type),
        quoted(&key.key)
    );
    app.detail_open = true;
    app.detail = Some(DetailPane {
        id,
        detail: None,
        scroll: 0,
    });
    let mut effects = requery(app, ListId::All);
    effects.push(Effect::Read(Read::LoadDetail(id)));
    effects
}

/// A filter value as the filter language reads it back.
fn quoted(value: &str) -> String {
    if value.contains([' ', ',']) {
        format!("\"{value}\"")
    } else {
        value.to_string()
    }
}

pub(crate) fn drill_case_found(
    app: &mut App,
    key: CaseKey,
    id: Option<OperationId>,
) -> Vec<Effect> {
    app.drills.links.insert((key.path, key.case), id);
    Vec::new()
}

/// A file from the watched folder: replaces the one read before from the
/// same path (it was rewritten), else joins the others.
pub(crate) fn drill_loaded(app: &mut App, loaded: LoadedDrill) -> Vec<Effect> {
    let drills = &mut app.drills;
    drills.links.retain(|(path, _), _| *path != loaded.path);
    match drills.files.iter_mut().find(|f| f.path == loaded.path) {
        Some(old) => *old = loaded,
        None => drills.files.push(loaded),
    }
    // The open case may be the one reread: ask the ledger about it again.
    drills.link_request().into_iter().collect()
}
