//! The keys and answers of a bulk decision: `*` selects every row a
//! list's query matches, a/n/r/c open the form on that selection, Enter
//! writes what the reader judged, and the writer's progress ends it. The
//! plain data they pass around is `bulk`'s.

use super::bulk::{Bulk, BulkPreview, BulkWrite, Selection, id_list};
use super::effect::{Effect, Read, Write};
use super::form::{DecisionForm, Field};
use super::model::{App, FormSlot, Mode};
use super::pane::ListId;
use crate::domain::{DecisionKind, OperationId};
use crate::query::Query;

/// Which rows a decision is on, and forgetting a `*` selection.
impl App {
    /// Which operations a decision applies to: the marked rows, or the row
    /// under the cursor.
    pub fn decision_targets(&self) -> Vec<OperationId> {
        let Some(list) = self.current_list() else {
            return Vec::new();
        };
        if list.marks.is_empty() {
            list.window.selected().map(|r| r.id).into_iter().collect()
        } else {
            list.marks.iter().rev().copied().collect()
        }
    }

    /// Forgets an all-matching selection; when there was one, asks the reader
    /// to stop judging its rows (a preview over millions of rows would hold
    /// the reader, and every page behind it, for seconds).
    pub(super) fn drop_selection(&mut self) -> Vec<Effect> {
        match self.selection.take() {
            Some(_) => vec![Effect::Read(Read::CancelBulkPreview)],
            None => Vec::new(),
        }
    }
}

/// `*`: selects every row the current list's query matches.
pub(super) fn select_matching(app: &mut App) -> Vec<Effect> {
    let Some(list) = app.pane().list() else {
        return Vec::new();
    };
    let state = app.list(list);
    // Only the queue, as `settle decide --filter`: from the All view a
    // filter that also matches settled rows must not reach them. The
    // queue's own count is the selection's; the All list's is not.
    let selection = Selection {
        list,
        query: state.query.clone().and(Query::queue()),
        filter: state.filter_text.clone(),
        count: state.count.filter(|_| list == ListId::Queue),
    };
    let n = selection
        .count
        .map_or("all".to_string(), |n| format!("all {n}"));
    let filter = if selection.filter.is_empty() {
        "this list".to_string()
    } else {
        format!("`{}`", selection.filter)
    };
    let scope = if list == ListId::Queue {
        ""
    } else {
        " in the queue"
    };
    app.info(format!(
        "selected {n} rows matching {filter}{scope}: a/n/r/c decide them, esc drops the selection"
    ));
    app.selection = Some(selection);
    Vec::new()
}

/// a/n/r/c with a selection: the form on every matching row, judged by the
/// reader before Enter can write.
pub(super) fn open_bulk_form(
    app: &mut App,
    kind: DecisionKind,
    selection: Selection,
) -> Vec<Effect> {
    let mut form = DecisionForm::new(kind, Vec::new(), None);
    let asked = form.template(&app.operator);
    let query = selection.query.clone();
    form.bulk = Some(Box::new(Bulk {
        selection,
        preview: None,
        asked: asked.clone(),
    }));
    form.focus = form.fields().first().copied().unwrap_or(Field::Note);
    app.mode = Mode::Form(FormSlot::Editing(Box::new(form)));
    vec![Effect::Read(Read::PreviewBulk {
        query: Box::new(query),
        template: asked,
    })]
}

/// Enter on a bulk form: judges again if the fields changed since the
/// preview, refuses until the typed count is the count it will write, then
/// writes the passing rows at the versions the preview saw.
pub(super) fn confirm_bulk(app: &mut App) -> Vec<Effect> {
    let operator = app.operator.clone();
    let Some(form) = app.mode.form_mut() else {
        return Vec::new();
    };
    let template = form.template(&operator);
    let Some(bulk) = form.bulk.as_mut() else {
        return Vec::new();
    };
    let Some(preview) = &bulk.preview else {
        form.problem = Some("still judging the matching rows; try again in a moment".into());
        return Vec::new();
    };
    if preview.template != template {
        // What is written must be what was judged: judge again with it.
        bulk.asked = template.clone();
        bulk.preview = None;
        form.confirm_count.clear();
        form.problem = Some("the fields changed: judging every row again…".into());
        return vec![Effect::Read(Read::PreviewBulk {
            query: Box::new(bulk.selection.query.clone()),
            template,
        })];
    }
    let n = preview.pass.len();
    if n == 0 {
        form.problem = Some("no matching row would be written; nothing to record".into());
        return Vec::new();
    }
    if form.confirm_count.trim() != n.to_string() {
        let each = preview
            .per_ledger_text()
            .map_or(String::new(), |t| format!(" ({t})"));
        form.problem = Some(format!(
            "{n} rows would be written{each}: type {n} in the confirm field to record them all"
        ));
        return Vec::new();
    }
    let targets = preview.pass.clone();
    form.problem = None;
    app.start_recording();
    app.info(format!("writing 0 of {n}…"));
    vec![Effect::Write(Write::Bulk { template, targets })]
}

/// The reader judged the matching rows; a preview for other fields than
/// the form's latest is out of date.
pub(super) fn preview_loaded(app: &mut App, preview: BulkPreview) -> Vec<Effect> {
    if let Some(form) = app.mode.form_mut()
        && let Some(bulk) = form.bulk.as_mut()
        && bulk.asked == preview.template
    {
        bulk.preview = Some(preview);
    }
    Vec::new()
}

/// The writer's progress, and at the end what came of every row.
pub(super) fn bulk_progress(app: &mut App, write: BulkWrite) -> Vec<Effect> {
    if !write.finished {
        app.info(format!("writing {} of {}…", write.done, write.total));
        return Vec::new();
    }
    // The popup shows the bulk form being written, if it is not hidden:
    // its job is done.
    if app.form().is_some_and(|f| f.bulk.is_some()) {
        app.mode.close_form();
    }
    let judged = app
        .recording
        .take()
        .and_then(|f| f.bulk)
        .and_then(|b| b.preview)
        .map(|p| p.matched - p.pass.len());
    app.selection = None;
    let mut text = format!(
        "wrote {} of {}; {} refused, {} conflicted (changed meanwhile, not overwritten)",
        write.written,
        write.total,
        write.refused.len(),
        write.conflicted.len()
    );
    for (what, ids) in [
        ("refused", &write.refused),
        ("conflicted", &write.conflicted),
    ] {
        if !ids.is_empty() {
            text.push_str(&format!(" | {what}: {}", id_list(ids, &app.labels)));
        }
    }
    if let Some(n) = judged.filter(|n| *n > 0) {
        text.push_str(&format!(" | {n} not sent: refused or changed when judged"));
    }
    if let Some(why) = &write.failed {
        text.push_str(&format!(" | stopped: {why}"));
    }
    for part in &write.parts {
        text.push_str(&format!(" | {}: ", part.ledger));
        match &part.failed {
            Some(why) => text.push_str(&format!("not written: {why}")),
            None => text.push_str(&format!(
                "wrote {}, {} refused, {} conflicted",
                part.written, part.refused, part.conflicted
            )),
        }
    }
    if write.failed.is_some()
        || !write.refused.is_empty()
        || !write.conflicted.is_empty()
        || !write.unwritten.is_empty()
    {
        app.error(text);
    } else {
        app.info(text);
    }
    super::navigation::refresh(app)
}
