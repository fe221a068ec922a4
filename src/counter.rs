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
}

pub struct Counter {
    jobs: Sender<CountJob>,
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
            let ledger = match Ledger::open(&path, Access::ReadOnly) {
                Ok((ledger, _)) => ledger,
                Err(e) => {
                    let _ =
                        answer_tx.send(Msg::LoadFailed(format!("counts unavailable: {e}")).into());
                    return;
                }
            };
            while let Ok(mut job) = job_rx.recv() {
                while let Ok(newer) = job_rx.try_recv() {
                    job = newer;
                }
                let answer = count(&ledger, &job.lists, job.now)
                    .unwrap_or_else(|e| Msg::LoadFailed(format!("counting: {e}")));
                if answer_tx.send(answer.into()).is_err() {
                    return;
                }
            }
        });
        Counter { jobs }
    }

    /// Asks for the counts at `now`. A worker that died answers nothing;
    /// the header keeps saying "counting…" rather than guessing.
    pub fn ask(&self, lists: Vec<(ListId, Query)>, now: DateTime<Utc>) {
        let _ = self.jobs.send(CountJob { lists, now });
    }
}
