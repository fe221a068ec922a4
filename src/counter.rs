//! The counting worker: a thread with its own read-only connection that
//! counts states and list totals, and groups the queue for the Clusters
//! view, off the screen's thread, so a full scan never blocks a key. It
//! answers with [`Msg`]s; it never touches the terminal or the model.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::app::{ListId, Msg};
use crate::effects::{clusters, count};
use crate::gate::Gate;
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
    /// Starts the worker on the ledger at `path`, opened once `gate` opens:
    /// one job at a time, and
    /// only the newest of the jobs waiting (older ones are out of date).
    /// Its answers go to `answers`, the shell's channel.
    pub fn spawn<T>(path: PathBuf, gate: Gate, answer_tx: Sender<T>) -> Counter
    where
        T: From<Msg> + Send + 'static,
    {
        let (jobs, job_rx) = mpsc::channel::<CountJob>();
        thread::spawn(move || {
            // Its connection after the first page ([`Gate`]).
            gate.wait();
            let mut ledger = match Ledger::open(&path, Access::ReadOnly) {
                Ok((ledger, _)) => ledger,
                Err(e) => {
                    let _ =
                        answer_tx.send(Msg::LoadFailed(format!("counts unavailable: {e}")).into());
                    return;
                }
            };
            // Counts of what the read model holds at once; the reader
            // drives its catching up and says how far it got.
            ledger.catch_up_in_steps();
            count_loop(&mut ledger, &job_rx, &answer_tx);
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

/// Answers jobs until the shell hangs up. Counts answer at once. A
/// grouping reads the whole queue (about 0.4 s at a million operations),
/// so after each one the next waits as long as it took: a service
/// committing every few milliseconds keeps the Clusters view current with
/// at most half a core, never a core flat out. The newest grouping waits;
/// none is lost.
fn count_loop<T: From<Msg>>(ledger: &mut Ledger, jobs: &Receiver<CountJob>, answers: &Sender<T>) {
    let mut deferred: Option<(Query, usize, DateTime<Utc>)> = None;
    let mut rest_until = Instant::now();
    loop {
        let received = match &deferred {
            Some(_) => jobs.recv_timeout(rest_until.saturating_duration_since(Instant::now())),
            None => jobs.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let mut job = match received {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => CountJob {
                lists: None,
                clusters: None,
                now: Utc::now(),
                reinspect: false,
            },
            Err(RecvTimeoutError::Disconnected) => return,
        };
        while let Ok(newer) = jobs.try_recv() {
            job = job.merged(newer);
        }
        if job.reinspect {
            match ledger.reinspect() {
                Ok(()) => ledger.catch_up_in_steps(),
                Err(e) => {
                    let _ = answers.send(Msg::LoadFailed(format!("counting: {e}")).into());
                }
            }
        }
        if let Some(lists) = job.lists {
            let counted = count(ledger, &lists, job.now)
                .unwrap_or_else(|e| Msg::LoadFailed(format!("counting: {e}")));
            if answers.send(counted.into()).is_err() {
                return;
            }
        }
        if let Some((query, top)) = job.clusters {
            deferred = Some((query, top, job.now));
        }
        if Instant::now() < rest_until {
            continue;
        }
        if let Some((query, top, now)) = deferred.take() {
            let began = Instant::now();
            let grouped = clusters(ledger, &query, top, now);
            rest_until = Instant::now() + began.elapsed().min(Duration::from_secs(5));
            if answers.send(grouped.into()).is_err() {
                return;
            }
        }
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

    /// Two groupings asked back to back: the second waits out the rest
    /// after the first and is still answered; counts are never held back.
    #[test]
    fn a_grouping_asked_during_the_rest_is_answered_after_it() {
        let h = crate::app::testkit::Harness::new();
        let (tx, rx) = mpsc::channel::<Msg>();
        let mut counter = Counter::spawn(h.ledger.path().to_path_buf(), Gate::open_now(), tx);
        counter.group(Query::queue(), 1, Utc::now());
        counter.group(Query::queue(), 5, Utc::now());
        counter.ask(vec![(ListId::Queue, Query::queue())], Utc::now());
        let (mut counted, mut widest) = (false, 0);
        while !(counted && widest > 1) {
            match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
                Msg::CountsLoaded { .. } => counted = true,
                Msg::ClustersLoaded(c) => {
                    widest = c.sections.iter().map(|s| s.top.len()).max().unwrap_or(0);
                }
                other => panic!("{other:?}"),
            }
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
