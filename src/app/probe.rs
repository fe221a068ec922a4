//! Probing from the console (issue 11, point 2): `p` asks the receivers
//! whether the effects of the selected row, the marked rows, or (after a
//! second `p` that confirms the count) every row a `*` selection matches
//! exist. The lookups run off the screen's thread ([`Effect::Probe`]) and
//! report each answer as it is recorded; the status line says how far they
//! got. Pure: running and recording is `crate::effects::probe`'s.

use super::model::App;
use super::msg::Effect;
use crate::domain::{OperationId, ProbeOutcome};

/// Where a probe of many rows stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Probing {
    /// The reader is listing the rows a selection matches; `filter` as
    /// typed, to show.
    Listing { filter: String },
    /// The rows are listed: a second `p` runs their lookups, any other key
    /// drops them.
    Confirm {
        ids: Vec<OperationId>,
        filter: String,
    },
    /// The lookups are running.
    Running(ProbeRun),
}

/// How far a run of lookups got.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeRun {
    pub total: usize,
    pub done: usize,
    pub found: usize,
    pub not_found: usize,
    pub unknown: usize,
    /// Probes whose answer came but could not be recorded, with why.
    pub unrecorded: Vec<(OperationId, String)>,
}

impl ProbeRun {
    /// `probing 3/12 · 2 found · 1 unknown`: the counts that are not zero.
    pub fn progress(&self) -> String {
        format!("probing {}/{}{}", self.done, self.total, self.tally())
    }

    fn tally(&self) -> String {
        [
            (self.found, "found"),
            (self.not_found, "not found"),
            (self.unknown, "unknown"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(" · {n} {what}"))
        .collect()
    }
}

/// What the prober reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeNews {
    /// One lookup ended; `recorded` says whether its probe was written.
    Probed {
        op: OperationId,
        outcome: ProbeOutcome,
        recorded: Result<(), String>,
    },
    /// Every lookup ended, or the run stopped early and `stopped` says why
    /// (no receivers file, a ledger that cannot be written, …).
    Finished { stopped: Option<String> },
}

/// Why nothing may be probed now, if so. A probe is recorded, so it needs
/// what a decision needs: a writable ledger that is still the opened file.
fn refusal(app: &App) -> Option<String> {
    if app.adopting.is_some() {
        return Some("adopting the ledger; probing opens when it is done".to_string());
    }
    if app.read_only {
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
        return vec![Effect::ListProbeTargets(query)];
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
        Some(pane) if app.detail_open && pane.id == op => vec![Effect::LoadDetail(op)],
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
        text.push_str(&format!(" | not recorded: #{op}: {why}{more}"));
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
