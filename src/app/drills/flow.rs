//! The keys and answers of drilling: `D` on an operation starts a drill
//! run of its op type, Esc or ctrl-c cancels one that runs, and the
//! driller's news moves the progress line, then says what the run proved
//! and where it wrote it. The plain data is `drilling`'s.

use super::running::{DrillEnd, DrillNews, Drilling};
use crate::app::effect::{Effect, Read};
use crate::app::model::{App, Mode};
use crate::app::probe::Probing;

/// Why no drill may start now, if so. Its verdict is recorded, so it
/// needs what a probe needs, and one run at a time: two would share the
/// receiver and the running calls Esc kills.
fn refusal(app: &App) -> Option<String> {
    if app.adopting().is_some() {
        return Some("adopting the ledger; drilling opens when it is done".to_string());
    }
    if app.read_only() {
        return Some(
            "read-only: a drill's verdict is recorded in the ledger, so drilling needs a \
             writable ledger"
                .to_string(),
        );
    }
    if let Some(why) = &app.file_problem {
        return Some(format!("{why}; drilling is refused: reopen the ledger"));
    }
    if let Some(run) = &app.drills.running {
        return Some(format!("still {}", run.progress()));
    }
    if let Some(Probing::Running(run)) = &app.probing {
        return Some(format!(
            "still {}; a drill can start when it is done",
            run.progress()
        ));
    }
    None
}

/// `D`: a drill run of the op type of the operation under the cursor.
pub(crate) fn drill(app: &mut App) -> Vec<Effect> {
    if let Some(why) = refusal(app) {
        app.error(why);
        return Vec::new();
    }
    let Some(row) = app.current_list().and_then(|l| l.window.selected()) else {
        app.error("no operation selected: D drills the op type of the one under the cursor");
        return Vec::new();
    };
    let run = Drilling {
        op_type: row.op_type.clone(),
        ..Drilling::default()
    };
    app.info(run.progress());
    let op_type = run.op_type.clone();
    app.drills.running = Some(run);
    vec![Effect::Drill(op_type)]
}

/// Esc or ctrl-c while a drill runs (and no form or prompt is open) stop
/// it; `None` when there is nothing to stop and the key means what it
/// always does.
pub(crate) fn cancel(app: &mut App) -> Option<Vec<Effect>> {
    if app.mode != Mode::Normal {
        return None;
    }
    let run = app.drills.running.as_mut()?;
    if run.cancelling {
        // Asked already: a second press is the key's own again (quit).
        return None;
    }
    run.cancelling = true;
    let line = run.progress();
    app.info(line);
    Some(vec![Effect::CancelDrill])
}

/// The driller's news: the progress line, and at the end what came of the
/// run, with the detail reread (its contract line names the new run).
pub(crate) fn news(app: &mut App, news: DrillNews) -> Vec<Effect> {
    let Some(run) = app.drills.running.as_mut() else {
        return Vec::new();
    };
    match news {
        DrillNews::Case { index, total, case } => {
            run.total = total;
            run.case = Some((index, case));
        }
        DrillNews::CaseDone { passed } => {
            run.done += 1;
            run.failed += usize::from(passed == Some(false));
        }
        DrillNews::Finished(end) => {
            let op_type = run.op_type.clone();
            app.drills.running = None;
            finished(app, &op_type, end);
            return reread_detail(app);
        }
    }
    let line = run.progress();
    if !run.cancelling {
        app.info(line);
    }
    Vec::new()
}

fn reread_detail(app: &App) -> Vec<Effect> {
    match &app.detail {
        Some(pane) if app.detail_open => vec![Effect::Read(Read::LoadDetail(pane.id))],
        _ => Vec::new(),
    }
}

/// `drilled place_order: no flaw found · results …/drill-results.json ·
/// recorded as verdict 3`, or why it stopped or was not recorded.
fn finished(app: &mut App, op_type: &str, end: Result<DrillEnd, String>) {
    let end = match end {
        Ok(end) => end,
        Err(why) => {
            app.error(format!("drill of {op_type} not run: {why}"));
            return;
        }
    };
    // The folder is the drill folder the console watches; the run's own
    // folder names it there.
    let results = format!("results {}", crate::domain::run_file(&end.results));
    if end.interrupted {
        app.info(format!(
            "drill of {op_type} cancelled: the cases that finished are written ({results}); \
             not recorded, a cancelled run proves less"
        ));
        return;
    }
    match end.recorded {
        Ok(id) => app.info(format!(
            "drilled {}: {results}; recorded as drill verdict {id}",
            end.verdict
        )),
        Err(why) => app.error(format!(
            "drilled {}: {results}; the verdict is not recorded: {why}",
            end.verdict
        )),
    }
}
