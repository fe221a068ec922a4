//! The keys and answers of probing: `p` on the selected or marked rows
//! starts their lookups; on a `*` selection it lists the rows first and a
//! second `p` confirms the count; the prober's news moves the progress
//! line. The plain data is `probe`'s.

use super::effect::{Effect, Read};
use super::model::App;
use super::probe::{ProbeNews, ProbeRun, Probing};
use crate::domain::{OperationId, ProbeOutcome};

/// Why nothing may be probed now, if so. A probe is recorded, so it needs
/// what a decision needs: a writable ledger that is still the opened file.
fn refusal(app: &App) -> Option<String> {
    if app.adopting().is_some() {
        return Some("adopting the ledger; probing opens when it is done".to_string());
    }
    if app.read_only() {
        return Some(
            "read-only: a probe is recorded in the ledger, so probing needs a writable ledger"
                .to_string(),
        );
    }
    if let Some(why) = &app.file_problem {
        return Some(format!("{why}; probing is refused: reopen the ledger"));
    }
    match &app.probing {
        Some(Probing::Running(run)) => Some(format!(
            "still {}; the next probe can start when it is done",
            run.progress()
        )),
        Some(Probing::Listing { .. }) => {
            Some("still listing the matching rows; the count shows in a moment".to_string())
        }
        Some(Probing::Confirm { .. }) | None => None,
    }
}

/// `p`: the lookups of the selected or marked rows start at once; with an
/// all-matching selection the rows are listed first and a second `p`
/// (with the count on screen) starts them.
pub(super) fn probe(app: &mut App) -> Vec<Effect> {
    if let Some(why) = refusal(app) {
        app.error(why);
        return Vec::new();
    }
    if let Some(Probing::Confirm { ids, .. }) = app.probing.take() {
        return start(app, ids);
    }
    if let Some(selection) = &app.selection {
        let filter = shown_filter(&selection.filter);
        let query = Box::new(selection.query.clone());
        app.info(format!("listing the rows matching {filter}…"));
        app.probing = Some(Probing::Listing { filter });
        return vec![Effect::Read(Read::ListProbeTargets(query))];
    }
    let ids = app.decision_targets();
    if ids.is_empty() {
        app.error("no operation selected");
        return Vec::new();
    }
    start(app, ids)
}

fn shown_filter(filter: &str) -> String {
    if filter.is_empty() {
        "this list".to_string()
    } else {
        format!("`{filter}`")
    }
}

fn start(app: &mut App, ids: Vec<OperationId>) -> Vec<Effect> {
    let run = ProbeRun {
        total: ids.len(),
        ..ProbeRun::default()
    };
    app.info(run.progress());
    app.probing = Some(Probing::Running(run));
    vec![Effect::Probe(ids)]
}

/// Any key but `p` drops a probe waiting for its confirmation (and a
/// listing whose answer would ask for one).
pub(super) fn disarm(app: &mut App) {
    match app.probing {
        Some(Probing::Confirm { .. }) => {
            app.probing = None;
            app.info("probe cancelled: no lookup ran");
        }
        Some(Probing::Listing { .. }) => app.probing = None,
        Some(Probing::Running(_)) | None => {}
    }
}

/// The reader listed the rows a selection matches: ask for the second `p`.
pub(super) fn targets_listed(app: &mut App, ids: Vec<OperationId>) -> Vec<Effect> {
    let Some(Probing::Listing { filter }) = app.probing.take() else {
        // Dropped meanwhile (another key): nothing to confirm.
        return Vec::new();
    };
    if ids.is_empty() {
        app.info(format!(
            "no row of the queue matches {filter}: nothing to probe"
        ));
        return Vec::new();
    }
    let n = ids.len();
    app.info(format!(
        "probe all {n} rows matching {filter}? p runs {n} lookups (each recorded), any other key cancels"
    ));
    app.probing = Some(Probing::Confirm { ids, filter });
    Vec::new()
}

/// The prober's news: the progress line, the detail reread when it shows
/// an operation just probed, and at the end what came of the run.
pub(super) fn news(app: &mut App, news: ProbeNews) -> Vec<Effect> {
    let Some(Probing::Running(run)) = app.probing.as_mut() else {
        return Vec::new();
    };
    match news {
        ProbeNews::Probed {
            op,
            outcome,
            recorded,
        } => {
            run.done += 1;
            match outcome {
                ProbeOutcome::Found => run.found += 1,
                ProbeOutcome::NotFound => run.not_found += 1,
                ProbeOutcome::Unknown => run.unknown += 1,
            }
            if let Err(why) = recorded {
                run.unrecorded.push((op, why));
            }
            let line = run.progress();
            app.info(line);
            reread_detail(app, op)
        }
        ProbeNews::Finished { stopped } => {
            let run = run.clone();
            app.probing = None;
            finished(app, &run, stopped);
            Vec::new()
        }
    }
}

fn reread_detail(app: &App, op: OperationId) -> Vec<Effect> {
    match &app.detail {
        Some(pane) if app.detail_open && pane.id == op => vec![Effect::Read(Read::LoadDetail(op))],
        _ => Vec::new(),
    }
}

/// `probed 12 · 2 found · 9 not found · 1 unknown`, and what went wrong.
fn finished(app: &mut App, run: &ProbeRun, stopped: Option<String>) {
    let mut text = format!("probed {} of {}{}", run.done, run.total, run.tally());
    if let Some((op, why)) = run.unrecorded.first() {
        let more = match run.unrecorded.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let op = app.labels.label(*op);
        text.push_str(&format!(" | not recorded: {op}: {why}{more}"));
    }
    if let Some(why) = &stopped {
        text.push_str(&format!(" | stopped: {why}"));
    }
    if stopped.is_some() || !run.unrecorded.is_empty() {
        app.error(text);
    } else {
        app.info(text);
    }
}
