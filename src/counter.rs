//! The counting worker: a thread with its own read-only connection that
//! counts states and list totals, and groups the queue for the Clusters
//! view, off the screen's thread, so a full scan never blocks a key. It
//! answers with [`Msg`]s; it never touches the terminal or the model.

use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::thread;

use chrono::{DateTime, Utc};

use crate::app::{ListId, Msg};
use crate::effects::{clusters, count};
use crate::query::Query;
use crate::store::{Access, Ledger};

/// A request for the counting worker: counts, a grouping, or both (two
/// requests merged while the worker was busy).
struct CountJob {
    lists: Option<Vec<(ListId, Query)>>,
    /// The query to group and the groups to keep per dimension.
    clusters: Option<(Query, usize)>,
    now: DateTime<Utc>,
    /// The ledger was adopted since the worker opened it: look again at
    /// which tables it has.
    reinspect: bool,
}

impl CountJob {
    /// This job, brought up to date by a newer one: the newer request of
    /// each kind wins, and a kind only the older asked for is still done.
    fn merged(self, newer: CountJob) -> CountJob {
        CountJob {
            lists: newer.lists.or(self.lists),
            clusters: newer.clusters.or(self.clusters),
            now: newer.now,
            reinspect: self.reinspect || newer.reinspect,
        }
    }
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
                    job = job.merged(newer);
                }
                if job.reinspect
                    && let Err(e) = ledger.reinspect()
                {
                    let _ = answer_tx.send(Msg::LoadFailed(format!("counting: {e}")).into());
                }
                let counted = job.lists.map(|lists| {
                    count(&ledger, &lists, job.now)
                        .unwrap_or_else(|e| Msg::LoadFailed(format!("counting: {e}")))
                });
                let grouped = job
                    .clusters
                    .map(|(query, top)| clusters(&ledger, &query, top, job.now));
                for answer in counted.into_iter().chain(grouped) {
                    if answer_tx.send(answer.into()).is_err() {
                        return;
                    }
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
        self.send(Some(lists), None, now);
    }

    /// Asks for the operations matching `query` grouped, `top` groups per
    /// dimension, at `now`.
    pub fn group(&mut self, query: Query, top: usize, now: DateTime<Utc>) {
        self.send(None, Some((query, top)), now);
    }

    fn send(
        &mut self,
        lists: Option<Vec<(ListId, Query)>>,
        clusters: Option<(Query, usize)>,
        now: DateTime<Utc>,
    ) {
        let _ = self.jobs.send(CountJob {
            lists,
            clusters,
            now,
            reinspect: std::mem::take(&mut self.reinspect),
        });
    }

    /// The ledger was adopted: the next count looks again at its tables.
    pub fn schema_changed(&mut self) {
        self.reinspect = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(lists: Option<Vec<(ListId, Query)>>, clusters: Option<(Query, usize)>) -> CountJob {
        CountJob {
            lists,
            clusters,
            now: Utc::now(),
            reinspect: false,
        }
    }

    #[test]
    fn a_newer_request_of_one_kind_never_drops_the_other_kind() {
        let counts = job(Some(vec![(ListId::Queue, Query::queue())]), None);
        let grouping = job(None, Some((Query::queue(), 8)));
        let merged = counts.merged(grouping);
        assert!(merged.lists.is_some() && merged.clusters.is_some());
        let newer = job(None, Some((Query::default(), 3)));
        assert_eq!(merged.merged(newer).clusters, Some((Query::default(), 3)));
    }
}
