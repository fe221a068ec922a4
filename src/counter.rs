//! The counting worker: a thread with its own read-only connection that
//! counts states and list totals off the screen's thread, so a full scan
//! never blocks a key. It answers with [`Msg`]s; it never touches the
//! terminal or the model.

use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::thread;

use chrono::{DateTime, Utc};

use crate::app::{ListId, Msg};
use crate::effects::count;
use crate::query::Query;
use crate::store::{Access, Ledger};

/// A request for the counting worker.
struct CountJob {
    lists: Vec<(ListId, Query)>,
    now: DateTime<Utc>,
    /// The ledger was adopted since the worker opened it: look again at
    /// which tables it has.
    reinspect: bool,
}

pub struct Counter {
    jobs: Sender<CountJob>,
    reinspect: bool,
}

impl Counter {
    /// Starts the worker on the ledger at `path`: one job at a time, and
    /// only the newest of the jobs waiting (older ones are out of date).
    /// Its answers go to `answers`, the shell's channel.
    pub fn spawn<T>(path: PathBuf, answer_tx: Sender<T>) -> Counter
    where
        T: From<Msg> + Send + 'static,
    {
        let (jobs, job_rx) = mpsc::channel::<CountJob>();
        thread::spawn(move || {
            let mut ledger = match Ledger::open(&path, Access::ReadOnly) {
                Ok((ledger, _)) => ledger,
                Err(e) => {
                    let _ =
                        answer_tx.send(Msg::LoadFailed(format!("counts unavailable: {e}")).into());
                    return;
                }
            };
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    let reinspect = job.reinspect || newer.reinspect;
                    job = CountJob { reinspect, ..newer };
                }
                if job.reinspect
                    && let Err(e) = ledger.reinspect()
                {
                    let _ = answer_tx.send(Msg::LoadFailed(format!("counting: {e}")).into());
                }
                let answer = count(&ledger, &job.lists, job.now)
                    .unwrap_or_else(|e| Msg::LoadFailed(format!("counting: {e}")));
                if answer_tx.send(answer.into()).is_err() {
                    return;
                }
            }
        });
        Counter {
            jobs,
            reinspect: false,
        }
    }

    /// Asks for the counts at `now`. A worker that died answers nothing;
    /// the header keeps saying "counting…" rather than guessing.
    pub fn ask(&mut self, lists: Vec<(ListId, Query)>, now: DateTime<Utc>) {
        let _ = self.jobs.send(CountJob {
            lists,
            now,
            reinspect: std::mem::take(&mut self.reinspect),
        });
    }

    /// The ledger was adopted: the next count looks again at its tables.
    pub fn schema_changed(&mut self) {
        self.reinspect = true;
    }
}
