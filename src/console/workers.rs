//! The threads that keep SQL off the screen's thread: a [`Reader`] (pages,
//! details, the form's details, exports) and a [`Writer`] (decisions), each with its
//! own connection, answering through the shell's channel. The reader's
//! queue lives here, on the screen's side, so "newest wins" is plain
//! single-threaded bookkeeping: a request supersedes the older ones it makes
//! pointless, and a running read it supersedes is interrupted. Never
//! touches the terminal or the model.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::app::bulk::Target;
use crate::app::window::Merge;
use crate::app::{Msg, PageSource, Pane, Read};
use crate::console::effects;
use crate::console::gate::Gate;
use crate::domain::{CatchUp, DecisionDraft, Declarations};
use crate::store::group;
use crate::store::{Access, InterruptHandle, Ledger, Waiter};

/// The reader finished its running job; these are its answers (none when
/// the job was interrupted: a newer request replaced it).
#[derive(Debug)]
pub struct ReadDone(pub Vec<Msg>);

struct ReadJob {
    read: Read,
    now: DateTime<Utc>,
    /// The ledger was adopted since the worker opened it: look again at
    /// which tables it has before reading.
    reinspect: bool,
}

/// The reading worker and the requests waiting for it, newest last.
pub struct Reader {
    jobs: Sender<ReadJob>,
    interrupt: InterruptHandle,
    running: Option<Read>,
    waiting: VecDeque<ReadJob>,
    reinspect: bool,
    thread: JoinHandle<()>,
}

impl Reader {
    /// Starts the worker on `ledger` (a connection of its own); it answers
    /// each job with one [`ReadDone`] on `answers`.
    pub fn spawn<T>(mut ledger: Ledger, answers: Sender<T>) -> Reader
    where
        T: From<ReadDone> + From<Msg> + Send + 'static,
    {
        let interrupt = ledger.interrupt_handle();
        let (jobs, job_rx) = mpsc::channel::<ReadJob>();
        let thread = thread::spawn(move || {
            // The console learnt it from the same ledger before the spawn.
            let mut scans = ledger.filters_scan();
            ledger.catch_up_in_steps(Waiter::Operator);
            let mut behind = None;
            let mut members = Vec::new();
            while let Some(job) = next_job(&ledger, &job_rx, &mut behind, &answers) {
                if job.reinspect {
                    if let Err(e) = ledger.reinspect() {
                        let failed = Msg::LoadFailed(effects::first_line(&e));
                        let _ = answers.send(ReadDone(vec![failed]).into());
                        continue;
                    }
                    ledger.catch_up_in_steps(Waiter::Operator);
                }
                let mut msgs = Vec::new();
                if ledger.filters_scan() != scans {
                    scans = !scans;
                    // Before the job's answer, which was read the new way.
                    msgs.push(Msg::FiltersScan(scans));
                }
                msgs.extend(effects::read(&ledger, job.now, job.read));
                if ledger.catching_up() != behind {
                    behind = ledger.catching_up();
                    msgs.push(Msg::CatchingUp(behind));
                }
                msgs.extend(ledger.read_from().map(Msg::ReadFrom));
                let now_members = ledger.members();
                if now_members != members {
                    members = now_members;
                    msgs.push(Msg::Members(members.clone()));
                }
                if answers.send(ReadDone(msgs).into()).is_err() {
                    return;
                }
            }
        });
        Reader {
            jobs,
            interrupt,
            running: None,
            waiting: VecDeque::new(),
            reinspect: false,
            thread,
        }
    }

    /// Ends the worker: the read under way is stopped, and the thread
    /// returns (its connection closing) once it finishes the step it is
    /// on. Its thread, to wait for ([`finish`]).
    pub fn close(self) -> JoinHandle<()> {
        if self.running.is_some() {
            self.interrupt.interrupt();
        }
        drop(self.jobs);
        self.thread
    }

    /// Asks for a read at `now`. Waiting requests it makes pointless are
    /// dropped; a running one is interrupted (its answer never comes).
    pub fn ask(&mut self, read: Read, now: DateTime<Utc>) {
        self.waiting.retain(|old| !supersedes(&read, &old.read));
        if self
            .running
            .as_ref()
            .is_some_and(|running| supersedes(&read, running))
        {
            // Before the new job can start: the interrupt can only stop
            // the read it was meant for.
            self.interrupt.interrupt();
        }
        self.waiting.push_back(ReadJob {
            read,
            now,
            reinspect: false,
        });
        self.start_next();
    }

    /// The worker answered: the next waiting request runs.
    pub fn finished(&mut self) {
        self.running = None;
        self.start_next();
    }

    /// The ledger was adopted: the next read looks again at its tables.
    pub fn schema_changed(&mut self) {
        self.reinspect = true;
    }

    fn start_next(&mut self) {
        if self.running.is_some() {
            return;
        }
        if let Some(mut job) = self.waiting.pop_front() {
            job.reinspect = std::mem::take(&mut self.reinspect);
            self.running = Some(job.read.clone());
            // A worker that died answers nothing; the list keeps saying
            // "loading…" and the status line has the reason it died with.
            let _ = self.jobs.send(job);
        }
    }
}

/// The next read asked for. While the read model is `behind`, each wait
/// for one is a step of its catching up, and where it stands is told
/// (`None` once it is current); None when the console is gone.
fn next_job<T: From<Msg>>(
    ledger: &Ledger,
    jobs: &Receiver<ReadJob>,
    behind: &mut Option<CatchUp>,
    answers: &Sender<T>,
) -> Option<ReadJob> {
    while behind.is_some() {
        match jobs.try_recv() {
            Ok(job) => return Some(job),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        let msg = match ledger.catch_up() {
            Ok(now) => {
                *behind = now;
                Msg::CatchingUp(now)
            }
            Err(e) => {
                // Reads go on with what the model holds; the next read
                // tries again.
                *behind = None;
                Msg::LoadFailed(effects::first_line(&e))
            }
        };
        // Not a [`ReadDone`]: no job of the console's ended.
        if answers.send(msg.into()).is_err() {
            return None;
        }
    }
    jobs.recv().ok()
}

/// Whether `new` makes `old` pointless. A page that replaces a list's rows
/// supersedes every older page (of that list: a new filter or position; of
/// another: the operator switched views, and coming back rereads anyway).
/// A page that extends a list supersedes an older one of the same kind for
/// the same list. A detail supersedes an older detail, the form's details
/// older form details.
fn supersedes(new: &Read, old: &Read) -> bool {
    match (new, old) {
        (
            Read::LoadPage {
                source: new_source,
                merge: new_merge,
                ..
            },
            Read::LoadPage {
                source: old_source,
                merge: old_merge,
                ..
            },
        ) => {
            matches!(new_merge, Merge::Replace { .. })
                || (pane_of(new_source) == pane_of(old_source)
                    && std::mem::discriminant(new_merge) == std::mem::discriminant(old_merge))
        }
        (Read::LoadDetail(_), Read::LoadDetail(_))
        | (Read::LoadFormDetails(_), Read::LoadFormDetails(_))
        | (Read::PreviewBulk { .. }, Read::PreviewBulk { .. })
        | (Read::CancelBulkPreview, Read::PreviewBulk { .. }) => true,
        _ => false,
    }
}

fn pane_of(source: &PageSource) -> Pane {
    match source {
        PageSource::Operations { list, .. } | PageSource::Scan { list, .. } => {
            Pane::Operations(*list)
        }
        PageSource::Audit => Pane::Audit,
    }
}

enum WriteJob {
    Decisions {
        drafts: Vec<DecisionDraft>,
        now: DateTime<Utc>,
    },
    /// A bulk decision: batches, with progress after each.
    Bulk {
        template: DecisionDraft,
        targets: Vec<Target>,
        now: DateTime<Utc>,
    },
}

/// The writing worker: decisions, in the order asked, on the connection
/// that opened (and adopted) the ledger.
pub struct Writer {
    jobs: Sender<WriteJob>,
    thread: JoinHandle<()>,
    /// The worker has its connection and takes jobs: it ends as soon as
    /// the job under way is written. Until then it may be adopting,
    /// which takes minutes at 10M and goes on from its last chunk at the
    /// next open, or waiting for a gate that will not open.
    writing: Arc<AtomicBool>,
}

impl Writer {
    pub fn spawn<T>(ledger: Ledger, answers: Sender<T>) -> Writer
    where
        T: From<Msg> + Send + 'static,
    {
        Writer::start(move |job_rx, flag| write_loop(ledger, None, &job_rx, &answers, &flag))
    }

    /// Opens the ledger at `path` on the worker once `gate` opens (after
    /// the first page is drawn), then records decisions on it. What the
    /// open found is said as it would have been at start: a migration's
    /// notice, why no write goes through now, or why none can.
    pub fn later<T>(
        path: PathBuf,
        access: Access,
        declared: Declarations,
        gate: Gate,
        answers: Sender<T>,
    ) -> Writer
    where
        T: From<Msg> + Send + 'static,
    {
        Writer::start(move |job_rx, flag| {
            gate.wait();
            // A connection lost while opening (a server restarting, a
            // network that stalled) is tried again until it opens: the
            // console is read-only meanwhile, not for the rest of its run.
            let mut told = None;
            let mut pending = None;
            let (mut ledger, report) = loop {
                match group::open(&path, access) {
                    Ok(opened) => break opened,
                    Err(e) => {
                        let why = effects::first_line(&e);
                        if told.as_ref() != Some(&why) {
                            told = Some(why.clone());
                            let _ = answers.send(Msg::WritesBlocked(Some(why)).into());
                        }
                        if !e.is_lost_connection() {
                            return;
                        }
                    }
                }
                // A job sent before the console heard is kept for the open.
                if pending.is_some() {
                    thread::sleep(LOOK_EVERY);
                    continue;
                }
                match job_rx.recv_timeout(LOOK_EVERY) {
                    Ok(job) => pending = Some(job),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            ledger.declare(declared);
            let said = [
                report.upgraded.map(Msg::Notice),
                report
                    .read_only_reason
                    .map(|why| Msg::WritesBlocked(Some(why))),
            ];
            for msg in said.into_iter().flatten() {
                if answers.send(msg.into()).is_err() {
                    return;
                }
            }
            write_loop(ledger, pending, &job_rx, &answers, &flag);
        })
    }

    /// Adopts (or migrates) the ledger at `path` on the worker, saying how
    /// far it got at each step ([`Msg::Adopting`]) and when it is done
    /// ([`Msg::Adopted`]); then records decisions on that connection. The
    /// console meanwhile shows the ledger read-only.
    pub fn adopt<T>(path: PathBuf, declared: Declarations, answers: Sender<T>) -> Writer
    where
        T: From<Msg> + Send + 'static,
    {
        Writer::start(move |job_rx, flag| {
            let mut progress = |p| {
                let _ = answers.send(Msg::Adopting(p).into());
            };
            let adopted = group::open_with_progress(&path, Access::ReadWrite, &mut progress);
            let (mut ledger, report) = match adopted {
                Ok(opened) => opened,
                Err(e) => {
                    let _ = answers.send(Msg::Adopted(Err(effects::first_line(&e))).into());
                    return;
                }
            };
            let outcome = match (report.read_only_reason, report.upgraded) {
                (Some(why), _) => Err(format!("read-only: {why}")),
                (None, done) => Ok(done.unwrap_or_else(|| "ledger adopted".to_string())),
            };
            ledger.declare(declared);
            if answers.send(Msg::Adopted(outcome).into()).is_ok() {
                write_loop(ledger, None, &job_rx, &answers, &flag);
            }
        })
    }

    /// Starts the worker: `body` gets the jobs, and the flag
    /// [`write_loop`] raises once it takes them.
    fn start(body: impl FnOnce(Receiver<WriteJob>, Arc<AtomicBool>) + Send + 'static) -> Writer {
        let (jobs, job_rx) = mpsc::channel::<WriteJob>();
        let writing = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&writing);
        let thread = thread::spawn(move || body(job_rx, flag));
        Writer {
            jobs,
            thread,
            writing,
        }
    }

    /// Ends the worker once the job under way is written; its thread, to
    /// wait for ([`finish`]), unless it is not writing yet.
    pub fn close(self) -> Option<JoinHandle<()>> {
        drop(self.jobs);
        self.writing.load(Ordering::Acquire).then_some(self.thread)
    }

    /// Records `drafts`; the answer is one [`Msg::DecisionsRecorded`].
    /// Says false when the worker is gone (nothing was written).
    pub fn record(&self, drafts: Vec<DecisionDraft>, now: DateTime<Utc>) -> bool {
        self.jobs.send(WriteJob::Decisions { drafts, now }).is_ok()
    }

    /// Records `template` on every target in batches; the answers are
    /// [`Msg::BulkProgress`], the last one finished. False when the worker
    /// is gone (nothing was written).
    pub fn record_bulk(
        &self,
        template: DecisionDraft,
        targets: Vec<Target>,
        now: DateTime<Utc>,
    ) -> bool {
        let job = WriteJob::Bulk {
            template,
            targets,
            now,
        };
        self.jobs.send(job).is_ok()
    }
}

/// How often the writer looks whether a write would go through, between
/// jobs: the header follows a failover within this.
const LOOK_EVERY: Duration = Duration::from_secs(1);

fn write_loop<T: From<Msg>>(
    mut ledger: Ledger,
    mut pending: Option<WriteJob>,
    jobs: &Receiver<WriteJob>,
    answers: &Sender<T>,
    writing: &AtomicBool,
) {
    writing.store(true, Ordering::Release);
    // What the console was last told; the first look is always said (the
    // console opened with what the open found, maybe since changed).
    let mut told: Option<Option<String>> = None;
    loop {
        let job = match pending
            .take()
            .map_or_else(|| jobs.recv_timeout(LOOK_EVERY), Ok)
        {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                let now = ledger.writes_blocked();
                if told.as_ref() != Some(&now) {
                    told = Some(now.clone());
                    if answers.send(Msg::WritesBlocked(now).into()).is_err() {
                        return;
                    }
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        match job {
            WriteJob::Decisions { drafts, now } => {
                let msg = effects::record(&mut ledger, now, &drafts);
                if answers.send(msg.into()).is_err() {
                    return;
                }
            }
            WriteJob::Bulk {
                template,
                targets,
                now,
            } => effects::record_bulk(&mut ledger, now, &template, &targets, |msg| {
                answers.send(msg.into()).is_ok()
            }),
        }
    }
}

/// Waits until each of `threads` has returned, or until `by`: a worker
/// closes its connections as it returns, and the last connection to a
/// SQLite file checkpoints its WAL and removes it. A console that quit
/// without closing them left the ledger's and the read model's WAL for
/// the next process to read back whole, and a server a broken connection
/// to log. A thread still busy at `by` is left to end
/// with the process, as a crash would: SQLite and the server recover.
pub fn finish(threads: impl IntoIterator<Item = JoinHandle<()>>, by: Instant) {
    for thread in threads {
        while !thread.is_finished() {
            if Instant::now() >= by {
                return;
            }
            thread::sleep(Duration::from_millis(1));
        }
        let _ = thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::ListId;
    use crate::app::window::{Fetch, RowKey};
    use crate::domain::OperationId;
    use crate::query::Query;

    fn page(ticket: u64, list: ListId, fetch: Fetch, merge: Merge) -> Read {
        Read::LoadPage {
            ticket,
            source: Box::new(PageSource::Operations {
                list,
                query: Query::default(),
                sort: Default::default(),
            }),
            fetch,
            merge,
            limit: 100,
        }
    }

    #[test]
    fn a_new_filter_supersedes_every_older_page_but_not_a_detail() {
        let replace = page(
            3,
            ListId::Queue,
            Fetch::First,
            Merge::Replace { keep: None },
        );
        let older = page(
            1,
            ListId::Queue,
            Fetch::First,
            Merge::Replace { keep: None },
        );
        let append = page(2, ListId::All, Fetch::After(RowKey::id(5)), Merge::Append);
        assert!(supersedes(&replace, &older));
        assert!(supersedes(&replace, &append));
        assert!(!supersedes(&replace, &Read::LoadDetail(OperationId(1))));
    }

    #[test]
    fn dropping_a_selection_stops_its_preview_and_nothing_else() {
        let preview = Read::PreviewBulk {
            query: Box::new(Query::queue()),
            template: crate::domain::DecisionDraft {
                op_id: OperationId(0),
                kind: crate::domain::DecisionKind::NotApplied,
                result_id: None,
                evidence: None,
                note: None,
                override_committed: false,
                operator: "alice".into(),
                expected_version: 0,
                undoes: None,
            },
        };
        assert!(supersedes(&Read::CancelBulkPreview, &preview));
        let replace = page(
            1,
            ListId::Queue,
            Fetch::First,
            Merge::Replace { keep: None },
        );
        assert!(!supersedes(&Read::CancelBulkPreview, &replace));
        assert!(!supersedes(
            &Read::CancelBulkPreview,
            &Read::LoadDetail(OperationId(1))
        ));
    }

    #[test]
    fn a_new_filter_never_cancels_an_export_under_way() {
        let export = Read::Export(Box::new(crate::app::ExportRequest {
            path: "out.csv".into(),
            format: crate::export::FileFormat::Csv,
            rows: crate::app::ExportRows::Audit,
        }));
        let replace = page(
            3,
            ListId::Queue,
            Fetch::First,
            Merge::Replace { keep: None },
        );
        assert!(!supersedes(&replace, &export));
        assert!(!supersedes(&export, &replace));
    }

    #[test]
    fn an_extending_page_never_drops_a_pending_replacement() {
        let replace = page(
            1,
            ListId::Queue,
            Fetch::First,
            Merge::Replace { keep: None },
        );
        let append = page(2, ListId::Queue, Fetch::After(RowKey::id(5)), Merge::Append);
        let newer_append = page(3, ListId::Queue, Fetch::After(RowKey::id(9)), Merge::Append);
        let prepend = page(
            4,
            ListId::Queue,
            Fetch::Before(RowKey::id(9)),
            Merge::Prepend,
        );
        assert!(!supersedes(&append, &replace));
        assert!(supersedes(&newer_append, &append));
        assert!(!supersedes(&prepend, &append));
    }
}
