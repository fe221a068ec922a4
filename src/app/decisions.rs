//! Deciding: marks, the decision form (open, type, confirm), undo through
//! a compensating decision, and what the shell says came of the drafts (a
//! busy ledger gives the form back, so Enter tries again).
//! Pure: recording is an [`Write::Decisions`](super::effect::Write::Decisions) the shell performs.

use super::effect::{Effect, Read, Write};
use super::form::{DecisionForm, Field};
use super::model::{App, FormSlot, Mode};
use super::msg::{DecisionOutcome, DecisionResult};
use super::navigation::{move_cursor, refresh};
use crate::domain::{DecisionId, DecisionKind, OperationId};
use crate::error::busy_text;

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
    if let Some(p) = app.adopting() {
        app.error(format!(
            "adopting the ledger ({} of {}: {}); decisions open when it is done",
            (p.done + 1).min(p.total),
            p.total,
            p.step
        ));
        return Vec::new();
    }
    if app.read_only() {
        app.error("read-only: decisions are disabled (opened with --read-only or the file is not writable)");
        return Vec::new();
    }
    if let Some(why) = &app.file_problem {
        app.error(format!("{why}; decisions are refused: reopen the ledger"));
        return Vec::new();
    }
    if app.recording.is_some() {
        app.error("still recording the last decision; its result shows in a moment");
        return Vec::new();
    }
    if undoes.is_none()
        && let Some(selection) = app.selection.clone()
    {
        return super::bulk_flow::open_bulk_form(app, kind, selection);
    }
    let targets = match undoes {
        Some((_, op)) => vec![op],
        None => app.decision_targets(),
    };
    if targets.is_empty() {
        app.error("no operation selected");
        return Vec::new();
    }
    let mut form = DecisionForm::new(
        kind,
        targets.clone(),
        undoes
            .map(|(d, _)| d)
            .filter(|_| kind == DecisionKind::Reopen),
    );
    form.undoing = undoes.map(|(d, _)| d);
    app.mode = Mode::Form(FormSlot::Editing(Box::new(form)));
    vec![Effect::Read(Read::LoadFormDetails(targets))]
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
    if app.recording.is_some() {
        return Vec::new();
    }
    if let Some(form) = app.mode.form_mut() {
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
    if let Some(form) = app.mode.form_mut() {
        form.cycle_focus(forward);
    }
    Vec::new()
}

pub(super) fn toggle_override(app: &mut App) -> Vec<Effect> {
    if let Some(form) = app.mode.form_mut()
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
    if app.recording.is_some() {
        return Vec::new();
    }
    let file_problem = app.file_problem.clone();
    let Some(form) = app.mode.form_mut() else {
        return Vec::new();
    };
    if let Some(why) = file_problem {
        form.problem = Some(format!("{why}: nothing recorded; reopen the ledger"));
        return Vec::new();
    }
    if form.bulk.is_some() {
        return super::bulk_flow::confirm_bulk(app);
    }
    match form.confirm(&app.operator, app.now) {
        Ok(drafts) => {
            let n = drafts.len();
            form.problem = None;
            // Kept whole: a busy ledger gives it back to press Enter again.
            app.start_recording();
            app.info(format!("recording {n} decision{}…", plural(n)));
            vec![Effect::Write(Write::Decisions(drafts))]
        }
        Err(problem) => {
            form.problem = Some(problem);
            Vec::new()
        }
    }
}

pub(super) fn decisions_recorded(app: &mut App, results: Vec<DecisionResult>) -> Vec<Effect> {
    // The form open now is the one that was recording (no other opens
    // meanwhile); its job is done. A busy ledger gives it back below.
    let form = app.recording.take();
    if form.is_some() {
        app.mode.close_form();
    }
    let undoing = form.as_ref().and_then(|f| f.undoing);
    let mut recorded = Vec::new();
    let mut problems = Vec::new();
    let mut busy = Vec::new();
    let mut waited = None;
    for r in results {
        let op = app.labels.label(r.op);
        match r.outcome {
            DecisionOutcome::Recorded(receipt) => {
                for list in [&mut app.queue, &mut app.all] {
                    list.marks.remove(&r.op);
                }
                let (from, to) = (&receipt.from_state, &receipt.to_state);
                recorded.push(format!("{op} {} ({from} → {to})", receipt.kind));
                match undoing {
                    Some(undone) => app.session.retain(|s| s.decision_id != undone),
                    None => app.session.push(receipt),
                }
            }
            DecisionOutcome::Refused { rule, reason } => {
                problems.push(format!(
                    "{} refused: {rule}: {reason}",
                    app.labels.label(r.op)
                ));
            }
            DecisionOutcome::Conflict {
                state,
                found,
                last_writer,
            } => problems.push(format!(
                "{op} changed meanwhile{}: now {state} (version {found}); nothing written, reloaded",
                last_writer.map(|w| format!(" by {w}")).unwrap_or_default()
            )),
            DecisionOutcome::Busy { waited: w } => {
                busy.push(r.op);
                waited = Some(w);
            }
            DecisionOutcome::Failed(e) => problems.push(format!("{op}: {e}")),
        }
    }
    if let Some(waited) = waited {
        let text = busy_text(waited);
        let ops: Vec<String> = busy.iter().map(|op| app.labels.label(*op)).collect();
        problems.push(format!("{}: {text}", ops.join(", ")));
        give_back_form(
            app,
            form,
            &busy,
            format!("{text}; press Enter to try again"),
        );
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
        && !effects.contains(&Effect::Read(Read::LoadDetail(pane.id)))
    {
        effects.push(Effect::Read(Read::LoadDetail(pane.id)));
    }
    effects
}

/// Reopens the form the operator confirmed, narrowed to the operations a
/// busy ledger left unwritten, with `problem` on it: pressing Enter again
/// tries exactly those. Nothing to give back when another form is open.
fn give_back_form(
    app: &mut App,
    form: Option<DecisionForm>,
    busy: &[OperationId],
    problem: String,
) {
    let Some(mut form) = form else { return };
    if app.form().is_some() {
        return;
    }
    if form.targets.len() != busy.len() {
        form.targets.retain(|t| busy.contains(t));
        if let Some(details) = form.details.as_mut() {
            details.retain(|d| busy.contains(&d.operation.id));
        }
        // The count to type changed with the targets.
        form.confirm_count.clear();
        let fields = form.fields();
        if !fields.contains(&form.focus) {
            form.focus = fields.first().copied().unwrap_or(Field::Note);
        }
    }
    form.problem = Some(problem);
    app.mode = Mode::Form(FormSlot::Editing(Box::new(form)));
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testkit::Harness;
    use super::super::{
        DecisionOutcome, DecisionResult, Effect, Intent, Mode, Msg, Write, apply, update,
    };
    use crate::domain::{DecisionDraft, DecisionKind};

    fn drafts(effects: &[Effect]) -> Vec<DecisionDraft> {
        effects
            .iter()
            .find_map(|e| match e {
                Effect::Write(Write::Decisions(d)) => Some(d.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    fn busy(drafts: &[DecisionDraft]) -> Msg {
        Msg::DecisionsRecorded(
            drafts
                .iter()
                .map(|d| DecisionResult {
                    op: d.op_id,
                    outcome: DecisionOutcome::Busy {
                        waited: Duration::from_secs(5),
                    },
                })
                .collect(),
        )
    }

    #[test]
    fn a_busy_ledger_keeps_the_form_open_with_the_message_and_enter_tries_again() {
        let mut h = Harness::new();
        h.keys("a");
        h.type_text(" (provider)");
        let typed = h.app.form().cloned().unwrap();
        let asked = drafts(&update(&mut h.app, Intent::Confirm));
        assert_eq!(asked.len(), 1);

        apply(&mut h.app, busy(&asked));
        assert!(matches!(h.app.mode, Mode::Form(_)));
        let form = h.app.form().expect("the form stays open");
        assert_eq!(form.result_id, typed.result_id, "what was typed is kept");
        assert_eq!(
            form.problem.as_deref(),
            Some(
                "ledger busy: another process has held the write lock for 5 s; nothing was written; press Enter to try again"
            )
        );
        let status = h.app.status.clone().unwrap();
        assert!(
            status.error && status.text.contains("ledger busy"),
            "{status:?}"
        );
        assert!(h.app.session.is_empty());

        // Enter again: the same draft, recorded this time.
        let again = drafts(&h.keys("enter"));
        assert_eq!(again, asked);
        assert!(h.app.form().is_none());
        assert_eq!(h.app.session.len(), 1);
    }

    #[test]
    fn a_busy_ledger_gives_back_only_the_operations_left_unwritten() {
        let mut h = Harness::new();
        h.keys("space space a tab");
        h.type_text("bulk check with provider");
        h.keys("tab tab");
        h.type_text("2");
        let asked = drafts(&update(&mut h.app, Intent::Confirm));
        assert_eq!(asked.len(), 2);
        assert!(asked.iter().all(|d| d.kind == DecisionKind::Applied));
        let mut results = match busy(&asked) {
            Msg::DecisionsRecorded(r) => r,
            _ => unreachable!(),
        };
        // The first was recorded before the lock was taken.
        let receipt = h.ledger.record_decision(&asked[0], h.app.now).unwrap();
        results[0].outcome = DecisionOutcome::Recorded(receipt);
        apply(&mut h.app, Msg::DecisionsRecorded(results));

        let form = h.app.form().expect("the form stays open");
        assert_eq!(form.targets, vec![asked[1].op_id]);
        assert_eq!(form.evidence, "bulk check with provider");
        assert!(!form.is_multi(), "one operation left: no count to type");
        assert!(form.problem.as_deref().unwrap().starts_with("ledger busy"));
        let status = h.app.status.clone().unwrap();
        assert!(status.text.starts_with("recorded 1; "), "{status:?}");
    }
}
