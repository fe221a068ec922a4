//! The console's prober: performs an
//! [`crate::app::Effect::Probe`] on a thread of its own with a ledger
//! connection of its own, so lookups that take seconds never hold up the
//! keyboard, the reader or the writer's decisions. It reports each
//! recorded probe and the end as [`ProbeNews`]. Never sees the `App`.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc::Sender;

use chrono::{DateTime, Utc};

use crate::app::Msg;
use crate::app::probe::ProbeNews;
use crate::domain::OperationId;
use crate::error::Result;
use crate::query::Query;
use crate::receivers::probing;
use crate::store::group;
use crate::store::{Access, Ledger};

/// What one run of the prober needs: where the ledger and the receivers
/// file are, who probes, and which operations.
#[derive(Debug, Clone)]
pub struct ProbeJob {
    pub ledger: PathBuf,
    /// The receivers file [`crate::cli::config::Config`] resolved, if any.
    pub receivers: Option<PathBuf>,
    pub operator: String,
    pub ids: Vec<OperationId>,
}

/// The ids of the rows `query` matches, for `p` to confirm their count.
pub fn list_targets(
    ledger: &Ledger,
    query: &Query,
    now: DateTime<Utc>,
) -> Result<Vec<OperationId>> {
    probing::matching(ledger, query, now)
}

/// Runs `job` on a new thread; answers arrive on `answers` as
/// [`Msg::Probe`], the last one [`ProbeNews::Finished`]. `clock` stamps
/// each probe when its lookup ends.
pub fn spawn<T>(job: ProbeJob, clock: fn() -> DateTime<Utc>, answers: Sender<T>)
where
    T: From<Msg> + Send + 'static,
{
    std::thread::spawn(move || {
        let mut report = |news| answers.send(Msg::Probe(news).into()).is_ok();
        let stopped = run(&job, clock, &mut report).err();
        report(ProbeNews::Finished { stopped });
    });
}

/// Runs the lookups and records them; `Err` says why the run stopped
/// before every lookup was asked.
fn run(
    job: &ProbeJob,
    clock: fn() -> DateTime<Utc>,
    report: &mut dyn FnMut(ProbeNews) -> bool,
) -> std::result::Result<(), String> {
    let line = |e: crate::error::Error| super::line::first_line(&e);
    // Read again for each run: an edited file applies to the next `p`.
    let receivers = probing::receivers_for_probing(job.receivers.as_deref()).map_err(line)?;
    let (mut ledger, _) = group::open(&job.ledger, Access::ReadWrite).map_err(line)?;
    if ledger.is_read_only() {
        return Err(
            "the ledger cannot be written, and each probe is recorded in it; nothing was probed"
                .to_string(),
        );
    }
    let ops = probing::operations(&ledger, &job.ids).map_err(line)?;
    let mut stopped = Ok(());
    probing::probe_all(&mut ledger, &receivers, &ops, &job.operator, &clock, |p| {
        let recorded = p
            .recorded
            .map(|_| ())
            .map_err(|e| super::line::first_line(&e));
        let failed = recorded.clone().err();
        let news = ProbeNews::Probed {
            op: p.op.id,
            outcome: probing::outcome_of(&p.lookup.outcome),
            recorded,
        };
        // Nobody listens any more (the console quit): ask no receiver more.
        if !report(news) {
            return ControlFlow::Break(());
        }
        match failed {
            // The next would fail the same way; the lookups would be lost.
            Some(why) => {
                stopped = Err(format!("recording a probe failed: {why}"));
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    });
    stopped
}
