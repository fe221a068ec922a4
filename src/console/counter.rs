//! The counting worker: a thread with its own read-only connection that
//! counts states and list totals, and groups the queue for the Clusters
//! view, off the screen's thread, so a full scan never blocks a key. It
//! answers with [`Msg`]s; it never touches the terminal or the model.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::app::{ListId, Msg};
use crate::console::effects::{self, clusters, count};
use crate::console::gate::Gate;
use crate::query::Query;
use crate::store::group;
use crate::store::{Access, InterruptHandle, Ledger, Waiter};

type Lists = Vec<(ListId, Query)>;

/// A request for the counting worker: counts, a grouping, or both (two
/// requests merged while the worker was busy).
struct CountJob {
    lists: Option<Lists>,
    /// The query to group and the groups to keep per dimension.
    clusters: Option<(Query, usize)>,
    /// The Clusters view was left: drop the grouping waiting (before
    /// taking `clusters`, which is newer).
    stop_grouping: bool,
    now: DateTime<Utc>,
    /// The ledger was adopted since the worker opened it: look again at
    /// which tables it has.
    reinspect: bool,
}

impl CountJob {
    /// A job asking for nothing yet, at `now`.
    fn at(now: DateTime<Utc>) -> CountJob {
        CountJob {
            lists: None,
            clusters: None,
            stop_grouping: false,
            now,
            reinspect: false,
        }
    }

    /// This job, brought up to date by a newer one: the newer request of
    /// each kind wins, and a kind only the older asked for is still done.
    fn merged(self, newer: CountJob) -> CountJob {
        let clusters = match newer.stop_grouping {
            true => newer.clusters,
            false => newer.clusters.or(self.clusters),
        };
        CountJob {
            lists: newer.lists.or(self.lists),
            clusters,
            stop_grouping: self.stop_grouping || newer.stop_grouping,
            now: newer.now,
            reinspect: self.reinspect || newer.reinspect,
        }
    }
}

pub struct Counter {
    jobs: Sender<CountJob>,
    reinspect: bool,
    running: Running,
    thread: JoinHandle<()>,
}

/// The count under way, seen from both sides: the worker says which lists
/// it counts, and the shell stops it when the operator has left them (a
/// filter's count can read millions of rows; one nobody waits for must
/// not hold up the next, nor load the machine).
#[derive(Clone, Default)]
struct Running {
    counting: Arc<Mutex<Counting>>,
    /// The worker's connection's, once it opened the ledger.
    interrupt: Arc<OnceLock<InterruptHandle>>,
}

#[derive(Default)]
struct Counting {
    lists: Option<Lists>,
    /// A grouping is under way.
    grouping: bool,
    /// The shell stopped it: its answer is not wanted.
    stopped: bool,
}

impl Running {
    /// Stops the count under way if it counts other lists than `lists`.
    fn stop_unless(&self, lists: &Lists) {
        self.stop_if(|c| c.lists.as_ref().is_some_and(|l| l != lists));
    }

    /// Stops the grouping under way, if one is.
    fn stop_grouping(&self) {
        self.stop_if(|c| c.grouping);
    }

    /// Interrupts what is under way if `unwanted` says so; its answer is
    /// then dropped.
    fn stop_if(&self, unwanted: impl FnOnce(&Counting) -> bool) {
        let Ok(mut counting) = self.counting.lock() else {
            return;
        };
        if unwanted(&counting)
            && let Some(handle) = self.interrupt.get()
        {
            counting.stopped = true;
            handle.interrupt();
        }
    }

    /// Counts `lists` with `run`, unless the shell stops it: then None.
    fn count(&self, lists: &Lists, run: impl FnOnce() -> Msg) -> Option<Msg> {
        self.under_way(Some(lists.clone()), run)
    }

    /// Groups with `run`, unless the shell stops it: then None.
    fn group(&self, run: impl FnOnce() -> Msg) -> Option<Msg> {
        self.under_way(None, run)
    }

    /// Runs `run`, counting `lists` or else grouping, as the shell sees it.
    fn under_way(&self, lists: Option<Lists>, run: impl FnOnce() -> Msg) -> Option<Msg> {
        if let Ok(mut counting) = self.counting.lock() {
            *counting = Counting {
                grouping: lists.is_none(),
                lists,
                stopped: false,
            };
        }
        let answer = run();
        let mut counting = self.counting.lock().ok()?;
        let stopped = std::mem::take(&mut *counting).stopped;
        (!stopped).then_some(answer)
    }
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
        let running = Running::default();
        let worker = running.clone();
        let thread = thread::spawn(move || {
            // Its connection after the first page ([`Gate`]).
            gate.wait();
            // A connection lost while opening (a server restarting, a
            // network that stalled) is tried again each second, the jobs
            // sent meanwhile merged: the counts come back with it.
            let mut told = None;
            let mut pending: Option<CountJob> = None;
            let mut ledger = loop {
                match group::open(&path, Access::ReadOnly) {
                    Ok((ledger, _)) => break ledger,
                    Err(e) => {
                        let why = format!("counts unavailable: {}", effects::first_line(&e));
                        if told.as_ref() != Some(&why) {
                            told = Some(why.clone());
                            let _ = answer_tx.send(Msg::LoadFailed(why).into());
                        }
                        if !e.is_lost_connection() {
                            return;
                        }
                    }
                }
                match job_rx.recv_timeout(Duration::from_secs(1)) {
                    Ok(job) => {
                        pending = Some(match pending.take() {
                            Some(older) => older.merged(job),
                            None => job,
                        });
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            let _ = worker.interrupt.set(ledger.interrupt_handle());
            // Counts of what the read model holds at once; the reader
            // drives its catching up and says how far it got.
            ledger.catch_up_in_steps(Waiter::Background);
            count_loop(&mut ledger, pending, &job_rx, &answer_tx, &worker);
        });
        Counter {
            jobs,
            reinspect: false,
            running,
            thread,
        }
    }

    /// Ends the worker: the count under way is stopped, and the thread
    /// returns (its connection closing). Its thread, to wait for
    /// ([`crate::console::workers::finish`]).
    pub fn close(self) -> JoinHandle<()> {
        self.running.stop_if(|c| c.lists.is_some() || c.grouping);
        drop(self.jobs);
        self.thread
    }

    /// Asks for the counts at `now`. A worker that died answers nothing;
    /// the header keeps saying "counting…" rather than guessing.
    /// A count under way of other lists is stopped.
    pub fn ask(&mut self, lists: Lists, now: DateTime<Utc>) {
        self.running.stop_unless(&lists);
        self.send(CountJob {
            lists: Some(lists),
            ..CountJob::at(now)
        });
    }

    /// Asks for the operations matching `query` grouped, `top` groups per
    /// dimension, at `now`.
    pub fn group(&mut self, query: Query, top: usize, now: DateTime<Utc>) {
        self.send(CountJob {
            clusters: Some((query, top)),
            ..CountJob::at(now)
        });
    }

    /// The Clusters view was left: the grouping waiting is dropped, and
    /// one under way stopped; neither answers.
    pub fn stop_grouping(&mut self) {
        self.running.stop_grouping();
        self.send(CountJob {
            stop_grouping: true,
            ..CountJob::at(Utc::now())
        });
    }

    /// Sends `job`, with a look at the tables if the ledger was adopted.
    fn send(&mut self, job: CountJob) {
        let _ = self.jobs.send(CountJob {
            reinspect: std::mem::take(&mut self.reinspect),
            ..job
        });
    }

    /// The ledger was adopted: the next count looks again at its tables.
    pub fn schema_changed(&mut self) {
        self.reinspect = true;
    }
}

/// A counter's own pace: how much of a core a rereading of the same
/// thing may take. The newest request waits out the rest; none is lost.
struct Paced<T> {
    waiting: Option<T>,
    rest_until: Instant,
    /// The rest after a run, as a multiple of the run's own time.
    rest_factor: u32,
}

impl<T> Paced<T> {
    fn new(rest_factor: u32) -> Paced<T> {
        Paced {
            waiting: None,
            rest_until: Instant::now(),
            rest_factor,
        }
    }

    /// Holds `request`, replacing an older one; `at_once` skips the rest
    /// (the operator asked for something new, not the same again).
    fn hold(&mut self, request: T, at_once: bool) {
        self.waiting = Some(request);
        if at_once {
            self.rest_until = Instant::now();
        }
    }

    /// Forgets the request held, if one is, and the rest: the next
    /// request (the operator came back) runs at once.
    fn drop_waiting(&mut self) {
        self.waiting = None;
        self.rest_until = Instant::now();
    }

    /// When the request held is due, if one is held.
    fn due_at(&self) -> Option<Instant> {
        self.waiting.as_ref().map(|_| self.rest_until)
    }

    /// Runs the request held if its rest is over, then rests in
    /// proportion to how long it took (at most [`LONGEST_REST`]).
    fn run_if_due<R>(&mut self, run: impl FnOnce(T) -> R) -> Option<R> {
        if Instant::now() < self.rest_until {
            return None;
        }
        let request = self.waiting.take()?;
        let began = Instant::now();
        let ran = run(request);
        let rest = began.elapsed().saturating_mul(self.rest_factor);
        self.rest_until = Instant::now() + rest.min(LONGEST_REST);
        Some(ran)
    }
}

/// The longest a counter rests between two runs, however slow the last.
const LONGEST_REST: Duration = Duration::from_secs(5);

/// Counts of the same lists rest nine times as long as they took: at
/// 10M operations they take about 100 ms, and a service committing every
/// few milliseconds would otherwise keep a core busy recounting. A tenth
/// of a core at most; new queries are counted at once.
const COUNT_REST_FACTOR: u32 = 9;

/// A grouping reads the whole queue (about 0.4 s at a million
/// operations) and rests as long as it took: at most half a core.
const GROUP_REST_FACTOR: u32 = 1;

/// Answers jobs until the shell hangs up. Counts of new queries answer
/// at once; a recount of the same ones, and every grouping, waits out
/// the rest after the last (see [`Paced`]). So a service committing
/// every few milliseconds keeps the header and the Clusters view current
/// without keeping a core busy.
fn count_loop<T: From<Msg>>(
    ledger: &mut Ledger,
    pending: Option<CountJob>,
    jobs: &Receiver<CountJob>,
    answers: &Sender<T>,
    running: &Running,
) {
    let mut counts: Paced<(Lists, DateTime<Utc>)> = Paced::new(COUNT_REST_FACTOR);
    let mut groups: Paced<(Query, usize, DateTime<Utc>)> = Paced::new(GROUP_REST_FACTOR);
    let mut counted: Option<Lists> = None;
    let mut pending = pending;
    loop {
        let due = counts.due_at().into_iter().chain(groups.due_at()).min();
        let received = match (pending.take(), due) {
            (Some(job), _) => Ok(job),
            (None, Some(at)) => jobs.recv_timeout(at.saturating_duration_since(Instant::now())),
            (None, None) => jobs.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let mut job = match received {
            Ok(job) => Some(job),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        while let Ok(newer) = jobs.try_recv() {
            job = Some(match job {
                Some(older) => older.merged(newer),
                None => newer,
            });
        }
        if let Some(job) = job {
            if job.reinspect {
                counted = None;
                match ledger.reinspect() {
                    Ok(()) => ledger.catch_up_in_steps(Waiter::Background),
                    Err(e) => {
                        let _ = answers.send(
                            Msg::LoadFailed(format!("counting: {}", effects::first_line(&e)))
                                .into(),
                        );
                    }
                }
            }
            if let Some(lists) = job.lists {
                let again = counted.as_ref() == Some(&lists);
                counts.hold((lists, job.now), !again);
            }
            if job.stop_grouping {
                groups.drop_waiting();
            }
            if let Some((query, top)) = job.clusters {
                groups.hold((query, top, job.now), false);
            }
        }
        let answered = counts.run_if_due(|(lists, now)| {
            let answer = running.count(&lists, || {
                count(ledger, &lists, now).unwrap_or_else(|e| {
                    Msg::LoadFailed(format!("counting: {}", effects::first_line(&e)))
                })
            });
            if answer.is_some() {
                counted = Some(lists);
            }
            answer
        });
        let grouped = groups
            .run_if_due(|(query, top, now)| running.group(|| clusters(ledger, &query, top, now)));
        for answer in answered.flatten().into_iter().chain(grouped.flatten()) {
            if answers.send(answer.into()).is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn job(lists: Option<Lists>, clusters: Option<(Query, usize)>) -> CountJob {
        CountJob {
            lists,
            clusters,
            ..CountJob::at(Utc::now())
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

    /// The same thing again waits out the rest after a slow run; a new
    /// request is run at once, and a held one is never dropped.
    #[test]
    fn a_recount_rests_in_proportion_and_a_new_query_does_not() {
        let mut paced: Paced<u32> = Paced::new(9);
        paced.hold(1, false);
        let slow = |n| {
            thread::sleep(Duration::from_millis(20));
            n
        };
        assert_eq!(paced.run_if_due(slow), Some(1));
        paced.hold(2, false);
        assert_eq!(paced.run_if_due(|n| n), None, "the same again rests");
        let due = paced.due_at().unwrap();
        assert!(
            due >= Instant::now() + Duration::from_millis(100),
            "rest ~ 9 x 20 ms"
        );
        paced.hold(3, true);
        assert_eq!(
            paced.run_if_due(|n| n),
            Some(3),
            "something new runs at once"
        );
        assert_eq!(paced.due_at(), None);
    }

    /// An interrupt that sets a flag.
    struct Flag(Arc<AtomicBool>);

    impl crate::store::Interrupt for Flag {
        fn interrupt(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A `Running` whose interrupt sets the flag returned with it.
    fn interruptible() -> (Running, Arc<AtomicBool>) {
        let running = Running::default();
        let flag = Arc::new(AtomicBool::new(false));
        let _ = running
            .interrupt
            .set(InterruptHandle::new(Flag(flag.clone())));
        (running, flag)
    }

    /// A statement that runs until `flag` is set.
    fn until(flag: Arc<AtomicBool>) -> impl FnOnce() -> Msg {
        move || {
            while !flag.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(1));
            }
            Msg::LoadFailed("interrupted".into())
        }
    }

    /// The operator left a filter whose count is under way: asking for
    /// other lists stops it and its answer never comes; asking for the
    /// same lists again stops nothing.
    #[test]
    fn a_count_of_lists_the_operator_left_is_stopped_and_never_answers() {
        let (running, flag) = interruptible();
        let filter: Lists = vec![(ListId::Queue, Query::parse("err:timeout").unwrap())];
        let base: Lists = vec![(ListId::Queue, Query::queue())];
        let (shell, seen) = (running.clone(), flag.clone());
        let (same, other) = (filter.clone(), base.clone());
        let asker = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            shell.stop_unless(&same);
            thread::sleep(Duration::from_millis(20));
            let untouched = !seen.load(Ordering::SeqCst);
            shell.stop_unless(&other);
            untouched
        });
        assert!(running.count(&filter, until(flag.clone())).is_none());
        assert!(asker.join().unwrap(), "the same lists again stop nothing");
        // Nothing under way: asking stops nothing, and a count answers.
        running.stop_unless(&filter);
        assert!(running.count(&base, until(flag)).is_some());
    }

    /// The operator left the Clusters view: the grouping under way is
    /// stopped and never answers, one asked before the stop is dropped,
    /// and one asked after it (they came back) is kept.
    #[test]
    fn leaving_the_view_stops_its_grouping_and_drops_the_one_waiting() {
        let (running, flag) = interruptible();
        let shell = running.clone();
        let leaver = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            shell.stop_grouping();
        });
        assert!(running.group(until(flag)).is_none());
        leaver.join().unwrap();

        let asked = job(None, Some((Query::queue(), 8)));
        let stop = CountJob {
            stop_grouping: true,
            ..job(None, None)
        };
        let merged = asked.merged(stop);
        assert!(merged.stop_grouping && merged.clusters.is_none());
        let back = merged.merged(job(None, Some((Query::queue(), 5))));
        assert_eq!(back.clusters, Some((Query::queue(), 5)));
        assert!(
            back.stop_grouping,
            "the stop still drops what was held before"
        );
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
