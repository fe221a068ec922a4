//! Deciding: marks, the decision form (open, type, confirm), undo through
//! a compensating decision, and what the shell says came of the drafts.
//! Pure: recording is an [`Effect::RecordDecisions`] the shell performs.

use super::form::{DecisionForm, Field};
use super::model::{App, Mode};
use super::msg::{DecisionOutcome, DecisionResult, Effect};
use super::navigation::{move_cursor, refresh};
use crate::domain::{DecisionId, DecisionKind, OperationId};

/// Space: marks or unmarks the row under the cursor and moves down.
pub(super) fn toggle_mark(app: &mut App) -> Vec<Effect> {
    let Some(id) = app.pane().list() else {
        return Vec::new();
    };
    let list = app.list_mut(id);
    if let Some(row) = list.window.selected().map(|r| r.id)
        && !list.marks.remove(&row)
    {
        list.marks.insert(row);
    }
    move_cursor(app, 1)
}

pub(super) fn open_form(
    app: &mut App,
    kind: DecisionKind,
    undoes: Option<(DecisionId, OperationId)>,
) -> Vec<Effect> {
    if let Some(p) = &app.adopting {
        app.error(format!(
            "adopting the ledger ({} of {}: {}); decisions open when it is done",
            p.done + 1,
            p.total,
            p.step
        ));
        return Vec::new();
    }
    if app.read_only {
        app.error("read-only: decisions are disabled (opened with --read-only or the file is not writable)");
        return Vec::new();
    }
    if let Some(why) = &app.file_problem {
        app.error(format!("{why}; decisions are refused: reopen the ledger"));
        return Vec::new();
    }
    if app.recording {
        app.error("still recording the last decision; its result shows in a moment");
        return Vec::new();
    }
    let targets = match undoes {
        Some((_, op)) => vec![op],
        None => app.decision_targets(),
    };
    if targets.is_empty() {
        app.error("no operation selected");
        return Vec::new();
    }
    app.pending_undo = undoes.map(|(d, _)| d);
    app.form = Some(DecisionForm::new(
        kind,
        targets.clone(),
        undoes
            .map(|(d, _)| d)
            .filter(|_| kind == DecisionKind::Reopen),
    ));
    app.mode = Mode::Form;
    vec![Effect::LoadFormDetails(targets)]
}

/// `u`: a compensating decision for this operator's last decision of the
/// session, through the same form so its checks are shown.
pub(super) fn undo(app: &mut App) -> Vec<Effect> {
    let Some(last) = app.session.last().cloned() else {
        app.error("nothing to undo: no decision recorded in this session");
        return Vec::new();
    };
    let kind = match last.kind {
        DecisionKind::Applied | DecisionKind::NotApplied => DecisionKind::Reopen,
        DecisionKind::RetrySameKey => DecisionKind::CancelRetry,
        _ => {
            app.error("nothing to undo");
            return Vec::new();
        }
    };
    open_form(app, kind, Some((last.decision_id, last.op_id)))
}

/// Types `c` into the focused field, or deletes its last character when
/// `None`; space on the override box ticks it.
pub(super) fn edit_form(app: &mut App, c: Option<char>) -> Vec<Effect> {
    // What is being written is what the form shows; it no longer changes.
    if app.recording {
        return Vec::new();
    }
    if let Some(form) = app.form.as_mut() {
        let focus = form.focus;
        match (form.field_text(focus), c) {
            (Some(text), Some(c)) => text.push(c),
            (Some(text), None) => {
                text.pop();
            }
            (None, Some(' ')) => form.override_committed = !form.override_committed,
            (None, _) => {}
        }
        form.problem = None;
    }
    Vec::new()
}

pub(super) fn cycle_field(app: &mut App, forward: bool) -> Vec<Effect> {
    if let Some(form) = app.form.as_mut() {
        form.cycle_focus(forward);
    }
    Vec::new()
}

pub(super) fn toggle_override(app: &mut App) -> Vec<Effect> {
    if let Some(form) = app.form.as_mut()
        && form.fields().contains(&Field::Override)
    {
        form.override_committed = !form.override_committed;
    }
    Vec::new()
}

/// Enter in the form: the drafts when every check passes, else the problem
/// stays on the form. The form stays open, saying it is recording, until
/// the writer answers; keys keep answering meanwhile (Esc hides it).
pub(super) fn confirm_form(app: &mut App) -> Vec<Effect> {
    if app.recording {
        return Vec::new();
    }
    let file_problem = app.file_problem.clone();
    let Some(form) = app.form.as_mut() else {
        app.mode = Mode::Normal;
        return Vec::new();
    };
    if let Some(why) = file_problem {
        form.problem = Some(format!("{why}: nothing recorded; reopen the ledger"));
        return Vec::new();
    }
    match form.confirm(&app.operator, app.now) {
        Ok(drafts) => {
            let n = drafts.len();
            form.problem = None;
            app.recording = true;
            app.info(format!("recording {n} decision{}…", plural(n)));
            vec![Effect::RecordDecisions(drafts)]
        }
        Err(problem) => {
            form.problem = Some(problem);
            Vec::new()
        }
    }
}

pub(super) fn decisions_recorded(app: &mut App, results: Vec<DecisionResult>) -> Vec<Effect> {
    // The form open now is the one that was recording (no other opens
    // meanwhile); its job is done.
    if app.recording && app.form.take().is_some() && app.mode == Mode::Form {
        app.mode = Mode::Normal;
    }
    app.recording = false;
    let undoing = app.pending_undo.take();
    let mut recorded = Vec::new();
    let mut problems = Vec::new();
    for r in results {
        match r.outcome {
            DecisionOutcome::Recorded(receipt) => {
                for list in [&mut app.queue, &mut app.all] {
                    list.marks.remove(&r.op);
                }
                recorded.push(format!(
                    "#{} {} ({} → {})",
                    r.op, receipt.kind, receipt.from_state, receipt.to_state
                ));
                match undoing {
                    Some(undone) => app.session.retain(|s| s.decision_id != undone),
                    None => app.session.push(receipt),
                }
            }
            DecisionOutcome::Refused { rule, reason } => {
                problems.push(format!("#{} refused: {rule}: {reason}", r.op));
            }
            DecisionOutcome::Conflict {
                state,
                found,
                last_writer,
            } => problems.push(format!(
                "#{} changed meanwhile{}: now {state} (version {found}); nothing written, reloaded",
                r.op,
                last_writer.map(|w| format!(" by {w}")).unwrap_or_default()
            )),
            DecisionOutcome::Failed(e) => problems.push(format!("#{}: {e}", r.op)),
        }
    }
    if problems.is_empty() {
        app.info(format!("recorded {}", recorded.join(", ")));
    } else {
        let mut text = problems.join(" | ");
        if !recorded.is_empty() {
            text = format!("recorded {}; {text}", recorded.len());
        }
        app.error(text);
    }
    let mut effects = refresh(app);
    if let Some(pane) = &app.detail
        && app.detail_open
        && !effects.contains(&Effect::LoadDetail(pane.id))
    {
        effects.push(Effect::LoadDetail(pane.id));
    }
    effects
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
