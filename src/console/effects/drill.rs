//! The console's driller: performs an [`crate::app::Effect::Drill`] on a
//! thread of its own with a ledger connection of its own, as the prober
//! does, so a run of seconds never holds up the keyboard. It reports each
//! case and the end as [`DrillNews`], writes the results folder in the
//! drill folder the console watches (so the Drills view shows the run)
//! and records the verdict. [`Driller::cancel`] stops a run as the CLI's
//! Ctrl-C does: no call starts, and every running call's process group is
//! killed. Never sees the `App`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

use crate::app::Msg;
use crate::app::drills::running::{DrillEnd, DrillNews};
use crate::drill::drilling;
use crate::drill::run::{
    self as drill_run, CASES, DEFAULT_CONCURRENCY, DEFAULT_MAX_WAIT, Progress,
};
use crate::receivers::Receivers;
use crate::store::Access;
use crate::store::group;

/// Where the console's drill runs go and what they read; one run at a
/// time (the model refuses a second).
pub struct Driller {
    ledger: PathBuf,
    /// The receivers file [`crate::cli::config::Config`] resolved, if any.
    receivers: Option<PathBuf>,
    /// The drill folder (`--drill-dir`, or the named ledger's).
    drill_dir: Option<PathBuf>,
    /// The running run's stop flag.
    stop: Arc<AtomicBool>,
}

impl Driller {
    pub fn new(ledger: &Path, receivers: Option<PathBuf>, drill_dir: Option<&Path>) -> Driller {
        Driller {
            ledger: ledger.to_path_buf(),
            receivers,
            drill_dir: drill_dir.map(Path::to_path_buf),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Drills `op_type` as `operator` on a new thread; answers arrive on
    /// `answers` as [`Msg::Drill`], the last one [`DrillNews::Finished`].
    /// `refused` (the ledger file is no longer in place) ends it at once.
    pub fn start<T>(
        &mut self,
        op_type: String,
        operator: &str,
        refused: Option<String>,
        answers: Sender<T>,
    ) where
        T: From<Msg> + Send + 'static,
    {
        let tell = move |news| answers.send(Msg::Drill(news).into()).is_ok();
        let out = match (refused, &self.drill_dir) {
            (Some(why), _) => {
                tell(DrillNews::Finished(Err(format!("{why}; nothing drilled"))));
                return;
            }
            (None, None) => {
                tell(DrillNews::Finished(Err(
                    "no drill folder to write the results to: open the console with \
                     --drill-dir DIR (or drill_dir in the named ledger)"
                        .to_string(),
                )));
                return;
            }
            (None, Some(dir)) => dir.clone(),
        };
        self.stop = Arc::new(AtomicBool::new(false));
        let job = Job {
            ledger: self.ledger.clone(),
            receivers: self.receivers.clone(),
            out,
            op_type,
            operator: operator.to_string(),
            stop: Arc::clone(&self.stop),
        };
        std::thread::spawn(move || {
            let mut tell = tell;
            let end = job.run(&mut tell);
            tell(DrillNews::Finished(end));
        });
    }

    /// Stops the run: no call starts, and those running are killed with
    /// their process groups, which Esc never reached.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::SeqCst);
        crate::receivers::kill_running();
    }
}

/// One run: what it needs, owned by its thread.
struct Job {
    ledger: PathBuf,
    receivers: Option<PathBuf>,
    out: PathBuf,
    op_type: String,
    operator: String,
    stop: Arc<AtomicBool>,
}

impl Job {
    /// Runs every case, writes the results and records the verdict; `Err`
    /// says why it never ran.
    fn run(&self, tell: &mut dyn FnMut(DrillNews) -> bool) -> Result<DrillEnd, String> {
        let line = |e: crate::error::Error| super::line::first_line(&e);
        // Read again for each run: an edited file applies to the next `D`.
        let receivers = match &self.receivers {
            Some(path) => Receivers::load(path).map_err(line)?,
            None => {
                return Err(
                    "no receivers file: open the console with --receivers FILE (a retry per \
                     op type to drill)"
                        .to_string(),
                );
            }
        };
        drill_run::drillable(&receivers, &self.op_type).map_err(line)?;
        let (mut ledger, _) = group::open(&self.ledger, Access::ReadWrite).map_err(line)?;
        let settings = drill_run::Settings {
            op_type: self.op_type.clone(),
            params: drilling::default_params(),
            cases: CASES.iter().collect(),
            concurrency: DEFAULT_CONCURRENCY,
            max_wait: DEFAULT_MAX_WAIT,
            declared: drilling::declared(&ledger, &receivers, &self.op_type).map_err(line)?,
        };
        let run = drill_run::run(&receivers, &settings, &self.stop, |p| {
            let news = match p {
                Progress::Started { index, total, spec } => DrillNews::Case {
                    index: index + 1,
                    total,
                    case: spec.id.to_string(),
                },
                Progress::Done { record, .. } => DrillNews::CaseDone {
                    passed: record.passed(),
                },
                Progress::Skipped { .. } => return,
            };
            // Nobody listens any more (the console quit): stop calling.
            if !tell(news) {
                self.stop.store(true, Ordering::SeqCst);
            }
        })
        .map_err(line)?;
        let file = run.write(&self.out, &settings).map_err(line)?;
        let recorded = if run.interrupted {
            Err("cancelled".to_string())
        } else if ledger.is_read_only() {
            Err("the ledger cannot be written".to_string())
        } else {
            drilling::record(&mut ledger, &run, &file, &self.operator).map_err(line)
        };
        Ok(DrillEnd {
            verdict: run.verdict.summary(),
            results: file.display().to_string(),
            interrupted: run.interrupted,
            recorded,
        })
    }
}
