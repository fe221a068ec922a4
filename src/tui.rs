//! The shell: the only module that touches the terminal, the clock and the
//! ledger. It turns terminal events into actions through the keymap, feeds
//! them to the pure [`app::update`], performs the [`Effect`]s it returns
//! against the store and feeds the results back as actions. Counts run on a
//! worker thread with its own read-only connection, so a full scan never
//! blocks the screen; `PRAGMA data_version` is polled on the input timeout
//! (never a busy loop) so other processes' writes show within a second.
//! The terminal is restored on quit, on error and on panic.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, MouseEventKind,
};
use ratatui::crossterm::execute;

use crate::app::{
    self, Action, App, DecisionOutcome, DecisionResult, DrillFile, Effect, ListId, View,
};
use crate::config::Config;
use crate::domain::{DecisionId, OperationId};
use crate::error::{Error, Result};
use crate::keymap::{Key, Keymap};
use crate::query::Query;
use crate::store::{Access, Ledger};
use crate::ui;

/// How often the ledger is asked whether another process wrote to it.
const POLL_EVERY: Duration = Duration::from_millis(300);

/// Opens the ledger and runs the console until the operator quits, with
/// the settings [`Config`] resolved.
pub fn run(ledger_path: &Path, drills: &[PathBuf], config: &Config) -> Result<()> {
    let access = if config.read_only {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let (mut ledger, report) = Ledger::open(ledger_path, access)?;
    let keymap = load_keymap(config.keymap.as_deref())?;
    // Read-only without a name: "(none)" is shown, never written.
    let operator = config
        .operator
        .clone()
        .unwrap_or_else(|_| "(none)".to_string());
    let mut app = App::new(
        ledger_path.display().to_string(),
        operator,
        ledger.is_read_only(),
        keymap,
        Utc::now(),
    );
    app.color = config.colour;
    app.drills = drills.iter().map(|p| read_drill(p)).collect();
    // The missing operator comes last so it is what the status line shows:
    // it is the one the operator can fix.
    let opened: Vec<Action> = [
        report.upgraded.map(Action::Notice),
        report
            .read_only_reason
            .map(|r| Action::Notice(format!("read-only: {r}"))),
        report.not_adopted.map(Action::Notice),
        config.read_only_reason.clone().map(Action::Notice),
    ]
    .into_iter()
    .flatten()
    .collect();
    let counter = spawn_counter(ledger_path.to_path_buf());

    let mut terminal =
        ratatui::try_init().map_err(|e| terminal_error("starting the terminal", e))?;
    install_panic_hook();
    // Mouse capture is a nicety (wheel scrolling); a terminal without it
    // still works with keys.
    let _ = execute!(io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut ledger, &mut app, &counter, opened);
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn terminal_error(doing: &str, source: io::Error) -> Error {
    Error::Io {
        path: PathBuf::from("/dev/tty"),
        doing: doing.to_string(),
        source,
    }
}

/// ratatui's hook restores the screen; this one also stops mouse reporting
/// first, or the shell would receive escape codes after a panic.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        previous(info);
    }));
}

/// Reads the keymap file [`Config`] chose, or the default keys.
fn load_keymap(path: Option<&Path>) -> Result<Keymap> {
    let text = match path {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|source| Error::Io {
            path: p.to_path_buf(),
            doing: "reading the keymap".to_string(),
            source,
        })?),
        None => None,
    };
    Keymap::load(text.as_deref()).map_err(|e| {
        Error::Usage(format!(
            "{}: {e}",
            path.map_or("keymap".to_string(), |p| p.display().to_string())
        ))
    })
}

/// Reads and analyses a `--drill` file once, at start; the view shows the
/// same report as `settle drill show`, or why the file could not be read.
fn read_drill(path: &Path) -> DrillFile {
    let summary = crate::drill::load(path)
        .map(|loaded| {
            crate::drill::render_text(&[loaded])
                .lines()
                .map(str::to_string)
                .collect()
        })
        .map_err(|e| first_line(&e));
    DrillFile {
        path: path.display().to_string(),
        summary,
    }
}

/// A request for the counting worker.
struct CountJob {
    lists: Vec<(ListId, Query)>,
    now: DateTime<Utc>,
}

struct Counter {
    jobs: Sender<CountJob>,
    answers: Receiver<Action>,
}

/// The counting worker: its own read-only connection, one job at a time,
/// and only the newest of the jobs waiting (older ones are out of date).
fn spawn_counter(path: PathBuf) -> Counter {
    let (jobs, job_rx) = mpsc::channel::<CountJob>();
    let (answer_tx, answers) = mpsc::channel();
    thread::spawn(move || {
        let ledger = match Ledger::open(&path, Access::ReadOnly) {
            Ok((ledger, _)) => ledger,
            Err(e) => {
                let _ = answer_tx.send(Action::LoadFailed(format!("counts unavailable: {e}")));
                return;
            }
        };
        while let Ok(mut job) = job_rx.recv() {
            while let Ok(newer) = job_rx.try_recv() {
                job = newer;
            }
            let answer = count(&ledger, &job)
                .unwrap_or_else(|e| Action::LoadFailed(format!("counting: {e}")));
            if answer_tx.send(answer).is_err() {
                return;
            }
        }
    });
    Counter { jobs, answers }
}

fn count(ledger: &Ledger, job: &CountJob) -> Result<Action> {
    let counts = ledger.state_counts(job.now)?;
    let mut lists = Vec::new();
    for (id, query) in &job.lists {
        // The unfiltered lists are already counted by state; only a filter
        // needs a scan of its own.
        let n = if query.is_empty() {
            counts.total
        } else if *query == Query::queue() {
            counts.queue()
        } else {
            ledger.count(query, job.now)?
        };
        lists.push((*id, n));
    }
    Ok(Action::CountsLoaded { counts, lists })
}

fn event_loop(
    terminal: &mut DefaultTerminal,
    ledger: &mut Ledger,
    app: &mut App,
    counter: &Counter,
    opened: Vec<Action>,
) -> Result<()> {
    let draw_error = |e| terminal_error("drawing", e);
    let size = terminal.size().map_err(draw_error)?;
    dispatch(
        app,
        ledger,
        counter,
        Action::Resize(size.width, size.height),
    );
    dispatch(app, ledger, counter, Action::ShowView(View::Queue));
    for notice in opened {
        dispatch(app, ledger, counter, notice);
    }
    let mut seen_version = ledger.data_version().ok();
    let mut next_poll = Instant::now() + POLL_EVERY;
    loop {
        dispatch(app, ledger, counter, Action::Tick(Utc::now()));
        terminal.draw(|f| ui::render(app, f)).map_err(draw_error)?;
        if app.quit {
            return Ok(());
        }
        let wait = next_poll.saturating_duration_since(Instant::now());
        if event::poll(wait).map_err(|e| terminal_error("reading the keyboard", e))? {
            let action =
                match event::read().map_err(|e| terminal_error("reading the keyboard", e))? {
                    Event::Key(k) => Key::from_event(&k)
                        .and_then(|key| app.keymap.resolve(app.mode.key_mode(), key)),
                    Event::Mouse(m) => match m.kind {
                        MouseEventKind::ScrollDown => Some(Action::Scroll(3)),
                        MouseEventKind::ScrollUp => Some(Action::Scroll(-3)),
                        _ => None,
                    },
                    Event::Resize(w, h) => Some(Action::Resize(w, h)),
                    _ => None,
                };
            if let Some(action) = action {
                dispatch(app, ledger, counter, action);
            }
        }
        if Instant::now() >= next_poll {
            next_poll = Instant::now() + POLL_EVERY;
            match ledger.data_version() {
                Ok(v) => {
                    if app.live_error.is_some() {
                        dispatch(app, ledger, counter, Action::LiveRestored);
                    }
                    if Some(v) != seen_version {
                        seen_version = Some(v);
                        dispatch(app, ledger, counter, Action::LedgerChanged);
                    }
                }
                // Said once, not every poll: the status line keeps it.
                Err(e) if app.live_error.is_none() => {
                    dispatch(app, ledger, counter, Action::LiveLost(e.to_string()));
                }
                Err(_) => {}
            }
        }
        while let Ok(answer) = counter.answers.try_recv() {
            dispatch(app, ledger, counter, answer);
        }
    }
}

/// Runs `action` through `update` and performs the effects, feeding their
/// results back until nothing is left to do.
fn dispatch(app: &mut App, ledger: &mut Ledger, counter: &Counter, action: Action) {
    let mut queue = VecDeque::from([action]);
    while let Some(action) = queue.pop_front() {
        for effect in app::update(app, action) {
            match effect {
                // Off the screen path. A worker that died answers nothing;
                // the header keeps saying "counting…" rather than guessing.
                Effect::Count(lists) => {
                    let _ = counter.jobs.send(CountJob {
                        lists,
                        now: app.now,
                    });
                }
                effect => queue.extend(perform(ledger, app.now, effect)),
            }
        }
    }
}

/// Performs one effect against the ledger at `now` and returns what came of
/// it. Counts run here only when no worker takes them (tests).
pub(crate) fn perform(ledger: &mut Ledger, now: DateTime<Utc>, effect: Effect) -> Vec<Action> {
    let failed = |e: Error| vec![Action::LoadFailed(first_line(&e))];
    match effect {
        Effect::LoadPage {
            list,
            query,
            fetch,
            merge,
            limit,
        } => match ledger.page(&query, fetch.map(OperationId), limit, now) {
            Ok(rows) => vec![Action::PageLoaded {
                list,
                fetch,
                merge,
                limit,
                rows,
            }],
            Err(e) => failed(e),
        },
        Effect::LoadAudit {
            fetch,
            merge,
            limit,
        } => match ledger.audit_page(fetch.map(DecisionId), limit) {
            Ok(rows) => vec![Action::AuditLoaded {
                fetch,
                merge,
                limit,
                rows,
            }],
            Err(e) => failed(e),
        },
        Effect::LoadDetail(id) => match ledger.detail(id) {
            Ok(d) => vec![Action::DetailLoaded(Box::new(d))],
            Err(e) => failed(e),
        },
        Effect::LoadFormDetails(ids) => {
            let mut details = Vec::new();
            let mut out = Vec::new();
            for id in ids {
                match ledger.detail(id) {
                    Ok(d) => details.push(d),
                    Err(e) => out.push(Action::LoadFailed(first_line(&e))),
                }
            }
            out.insert(0, Action::FormDetailsLoaded(details));
            out
        }
        Effect::RecordDecisions(drafts) => {
            let results = drafts
                .iter()
                .map(|draft| DecisionResult {
                    op: draft.op_id,
                    outcome: match ledger.record_decision(draft, now) {
                        Ok(receipt) => DecisionOutcome::Recorded(receipt),
                        Err(Error::Refused { rule, reason, .. }) => DecisionOutcome::Refused {
                            rule: rule.label().to_string(),
                            reason,
                        },
                        Err(Error::VersionConflict {
                            state,
                            found,
                            last_writer,
                            ..
                        }) => DecisionOutcome::Conflict {
                            state,
                            found,
                            last_writer,
                        },
                        Err(e) => DecisionOutcome::Failed(first_line(&e)),
                    },
                })
                .collect();
            vec![Action::DecisionsRecorded(results)]
        }
        Effect::Count(lists) => {
            let job = CountJob { lists, now };
            vec![count(ledger, &job).unwrap_or_else(|e| Action::LoadFailed(first_line(&e)))]
        }
    }
}

/// Errors carry a "what to do" line for the CLI; the status line has room
/// for the first.
fn first_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
