//! The shell: the only module that touches the terminal, the clock and
//! the signals. It turns terminal events into intents through the keymap,
//! feeds them to the pure [`app::update`], hands the effects to the
//! workers (reads to the [`Reader`], decisions to the [`Writer`], counts to
//! the [`Counter`], lookups to a prober thread of their own) and feeds
//! their answers back through [`app::apply`] as they arrive on one
//! channel: the screen's thread never waits on SQL or a receiver. The
//! [`Watch`] notices other processes' commits and a replaced ledger file.
//! It draws only when something changed. The terminal is restored on quit,
//! on error, on panic and on SIGTERM, SIGINT, SIGHUP and SIGQUIT (then it
//! exits with 128 + the signal); SIGTSTP suspends with the terminal
//! restored, SIGCONT takes it back and redraws. Mouse reporting, unless
//! `--no-mouse`, is on exactly while the console has the terminal.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use chrono::Utc;
use ratatui::DefaultTerminal;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{Clear, ClearType, EnterAlternateScreen, enable_raw_mode};
use signal_hook::consts::signal::{SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};

use crate::app::{self, App, Count, Effect, Intent, Msg, View, Write};
use crate::cli::config::Config;
use crate::console::connections;
use crate::console::counter::Counter;
use crate::console::drill_dir::{self, DrillDir};
use crate::console::effects::drill::Driller;
use crate::console::gate::Gate;
use crate::console::input::keymap::Key;
use crate::console::input::mouse;
use crate::console::start::{access, new_app, open_notices, read_only_unasked};
use crate::console::watch::Watch;
use crate::console::workers::{self, ReadDone, Reader, Writer};
use crate::error::{Error, Result};
use crate::receivers::Receivers;
use crate::ui;

/// How often the watcher is asked about other processes' commits (for a
/// file two `stat`s, SQL only when they moved; for a server the last
/// answer of its own thread): a commit is on screen within this and a
/// page read.
const POLL_EVERY: Duration = Duration::from_millis(50);
/// How often the clock ticks while nothing happens: ages and "changed …
/// ago" are shown to the second.
const TICK_EVERY: Duration = Duration::from_secs(1);
/// How long a quitting console waits for its workers to close their
/// connections ([`workers::finish`]): a checkpoint of a WAL takes a few
/// milliseconds; a worker still scanning or counting is stopped first.
const CLOSE_WITHIN: Duration = Duration::from_millis(500);

/// Opens the ledger and runs the console until the operator quits, with
/// the settings [`Config`] resolved.
pub fn run(
    ledger_path: &Path,
    drills: &[PathBuf],
    drill_dir: Option<&Path>,
    config: &Config,
) -> Result<()> {
    let access = access(config);
    // The reader's read-only connection first: it validates the file, writes nothing, is
    // the reader's connection (a server's others wait for the first page);
    // a ledger to adopt is adopted on the writer while the operator looks.
    let gate = Gate::default();
    let mut opened = connections::open(ledger_path, access, &gate)?;
    // Read once: the detail, the form and the writer judge on them.
    let declared = Receivers::declarations_in(config.receivers.as_deref())?;
    opened.reader.declare(declared.clone());
    let mut app = new_app(
        &opened.reader,
        opened.read_only,
        opened.adopting,
        drills,
        config,
    )?;
    read_only_unasked(&mut app, opened.report.read_only_reason.clone());
    let notices = open_notices(opened.adopting, opened.report, config);

    let (wake_tx, wakes) = mpsc::channel::<Wake>();
    let path = ledger_path.to_path_buf();
    let mut shell = Shell {
        app: &mut app,
        reader: Reader::spawn(opened.reader, wake_tx.clone()),
        writer: opened
            .writer
            .spawn(path.clone(), declared, &gate, wake_tx.clone()),
        counter: Counter::spawn(path.clone(), gate.clone(), wake_tx.clone()),
        watch: opened.watch,
        gate,
        drill_dir: drill_dir.map(DrillDir::new),
        answers: wake_tx.clone(),
        suspend_asked: false,
        driller: Driller::new(ledger_path, config.receivers.clone(), drill_dir),
        ledger_path: path,
        receivers: config.receivers.clone(),
        mouse: config.mouse,
    };
    // The folder's files at start, read off this thread like later ones.
    shell.poll_drill_dir();
    // The first page is asked for before the terminal is set up, so the
    // server reads it while the screen is prepared (the size is the
    // terminal's own, asked of it without taking it).
    let size = ratatui::crossterm::terminal::size()
        .map_err(|e| terminal_error("asking the terminal's size", e))?;
    begin(&mut shell, size, notices);

    let mut terminal =
        ratatui::try_init().map_err(|e| terminal_error("starting the terminal", e))?;
    install_panic_hook();
    take_mouse(config.mouse);
    let result = forward_signals(&wake_tx).and_then(|()| {
        forward_input(wake_tx);
        event_loop(&mut terminal, &mut shell, &wakes, size)
    });
    restore_terminal();
    // Lookups still running would outlive the console (their groups are
    // their own, their timeouts die with it).
    crate::receivers::kill_running();
    shell.close();
    match result {
        Ok(Ended::Quit) => Ok(()),
        // The conventional status, as less, vim and readline give it.
        Ok(Ended::Signal(signal)) => std::process::exit(128 + signal),
        Err(e) => Err(e),
    }
}

/// Asks the terminal for clicks and the wheel, unless `--no-mouse`. A
/// nicety: a terminal without it still works with keys. Shift still
/// selects text (xterm-compatible terminals keep Shift-drags to
/// themselves while reporting the mouse).
fn take_mouse(mouse: bool) {
    if mouse {
        let _ = execute!(io::stdout(), EnableMouseCapture);
    }
}

/// Gives the terminal back as it was found: raw mode and the alternate
/// screen off, the cursor shown, mouse reporting off (said also after
/// `--no-mouse`: turning off what is off is harmless).
fn restore_terminal() {
    let _ = execute!(io::stdout(), DisableMouseCapture, Show);
    ratatui::restore();
}

/// Takes the terminal again after a suspension.
fn reenter_terminal(terminal: &mut DefaultTerminal, mouse: bool) -> Result<()> {
    let resuming = |e| terminal_error("resuming the terminal", e);
    enable_raw_mode().map_err(resuming)?;
    execute!(io::stdout(), EnterAlternateScreen, Clear(ClearType::All)).map_err(resuming)?;
    take_mouse(mouse);
    // The screen was cleared: forget the last frame so the next one is
    // drawn whole. (`Terminal::clear` would ask the terminal where its
    // cursor is, and the answer goes to the input thread.)
    terminal.swap_buffers();
    Ok(())
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

/// Everything that wakes the event loop, on one channel: nothing is
/// polled in a busy loop, and an answer is applied the moment it arrives.
enum Wake {
    Input(Event),
    /// The terminal cannot be read any more (closed, gone).
    InputLost(io::Error),
    /// A worker's answer (the writer's, the counter's).
    Answer(Msg),
    /// The reader finished its running job.
    Read(ReadDone),
    Signal(i32),
}

impl From<Msg> for Wake {
    fn from(msg: Msg) -> Wake {
        Wake::Answer(msg)
    }
}

impl From<ReadDone> for Wake {
    fn from(done: ReadDone) -> Wake {
        Wake::Read(done)
    }
}

/// How the console ended.
enum Ended {
    Quit,
    /// One of the signals that ask a program to stop.
    Signal(i32),
}

/// Signals become wakes, so the loop restores the terminal itself (a
/// handler may not). signal-hook runs the async-signal-safe part (a write
/// to a self-pipe) in the handler and delivers on a thread of its own; it
/// is the maintained crate crossterm itself builds on, and it needs no
/// `unsafe` here.
fn forward_signals(wakes: &Sender<Wake>) -> Result<()> {
    let mut signals =
        signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT])
            .map_err(|e| terminal_error("catching signals", e))?;
    let wakes = wakes.clone();
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if wakes.send(Wake::Signal(signal)).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Terminal events become wakes, read on a thread of their own. A mouse
/// event that means nothing (a move reports every cell the pointer
/// crosses) is dropped here, so it neither wakes the loop nor redraws.
fn forward_input(wakes: Sender<Wake>) {
    std::thread::spawn(move || {
        loop {
            let wake = match event::read() {
                Ok(Event::Mouse(m)) if mouse::intent(&m).is_none() => continue,
                Ok(event) => Wake::Input(event),
                Err(e) => Wake::InputLost(e),
            };
            let lost = matches!(wake, Wake::InputLost(_));
            if wakes.send(wake).is_err() || lost {
                return;
            }
        }
    });
}

fn event_loop(
    terminal: &mut DefaultTerminal,
    shell: &mut Shell,
    wakes: &Receiver<Wake>,
    asked: (u16, u16),
) -> Result<Ended> {
    let draw_error = |e| terminal_error("drawing", e);
    resized_since(terminal, shell, asked)?;
    let mut dirty = true;
    // The first page (or its failure) arrived; once drawn, the gate opens.
    let mut first_read = false;
    let mut next_poll = Instant::now() + POLL_EVERY;
    let mut next_tick = Instant::now() + TICK_EVERY;
    loop {
        if dirty {
            terminal
                .draw(|f| ui::render(shell.app, f))
                .map_err(draw_error)?;
            dirty = false;
            if std::mem::take(&mut first_read) {
                shell.gate.open();
            }
        }
        if shell.app.quit {
            return Ok(Ended::Quit);
        }
        let wait = next_poll
            .min(next_tick)
            .saturating_duration_since(Instant::now());
        let mut woken = match wakes.recv_timeout(wait) {
            Ok(wake) => vec![wake],
            Err(RecvTimeoutError::Timeout) => Vec::new(),
            // Every sender is gone: nothing can ever wake the loop again.
            Err(RecvTimeoutError::Disconnected) => return Ok(Ended::Quit),
        };
        // A burst (keys typed ahead, answers) is taken whole, then drawn once.
        woken.extend(wakes.try_iter());
        let now = Instant::now();
        if !woken.is_empty() {
            shell.tell(Msg::Tick(Utc::now()));
            dirty = true;
        }
        for wake in woken {
            match wake {
                Wake::Input(event) => shell.input(event),
                Wake::InputLost(e) => return Err(terminal_error("reading the keyboard", e)),
                Wake::Answer(msg) => shell.tell(msg),
                Wake::Read(ReadDone(msgs)) => {
                    first_read = true;
                    shell.reader.finished();
                    for msg in msgs {
                        shell.tell(msg);
                    }
                }
                Wake::Signal(SIGTSTP) => suspend(terminal, shell.mouse)?,
                // Also after a SIGSTOP this console did not see coming.
                Wake::Signal(SIGCONT) => reenter_terminal(terminal, shell.mouse)?,
                Wake::Signal(signal) => return Ok(Ended::Signal(signal)),
            }
            if shell.suspend_asked {
                shell.suspend_asked = false;
                suspend(terminal, shell.mouse)?;
            }
        }
        if now >= next_poll {
            next_poll = now + POLL_EVERY;
            for msg in shell.watch.poll(now) {
                shell.tell(msg);
                dirty = true;
            }
            shell.poll_drill_dir();
        }
        if now >= next_tick {
            next_tick = now + TICK_EVERY;
            shell.tell(Msg::Tick(Utc::now()));
            dirty = true;
        }
    }
}

/// Taking the terminal may have changed what it says of its size.
fn resized_since(terminal: &DefaultTerminal, shell: &mut Shell, asked: (u16, u16)) -> Result<()> {
    let size = terminal.size().map_err(|e| terminal_error("drawing", e))?;
    if (size.width, size.height) != asked {
        shell.tell(Msg::Resize(size.width, size.height));
    }
    Ok(())
}

/// The console's start: the terminal's size, the Queue asked for (the
/// first page), then what opening the ledger had to say.
fn begin(shell: &mut Shell, (width, height): (u16, u16), opened: Vec<Msg>) {
    shell.tell(Msg::Resize(width, height));
    shell.obey(Intent::ShowView(View::Queue));
    for notice in opened {
        shell.tell(notice);
    }
}

/// Ctrl-z or SIGTSTP: gives the terminal back, then stops as the default
/// action would; once continued, takes the terminal again and redraws.
fn suspend(terminal: &mut DefaultTerminal, mouse: bool) -> Result<()> {
    restore_terminal();
    signal_hook::low_level::emulate_default_handler(SIGTSTP)
        .map_err(|e| terminal_error("suspending", e))?;
    reenter_terminal(terminal, mouse)
}

/// The model and what performs its effects, while the console runs.
struct Shell<'a> {
    app: &'a mut App,
    reader: Reader,
    writer: Writer,
    counter: Counter,
    watch: Watch,
    /// Opened once the first page is drawn: the other connections wait.
    gate: Gate,
    /// `--drill-dir`: looked at on each poll; new files are read elsewhere.
    drill_dir: Option<DrillDir>,
    /// Where background reads (the drill folder's files) answer.
    answers: Sender<Wake>,
    /// Ctrl-z was pressed (raw mode turns it into a key, not a signal).
    suspend_asked: bool,
    /// The prober opens its own connection to it for each run.
    ledger_path: PathBuf,
    /// The receivers file the prober reads for each run.
    receivers: Option<PathBuf>,
    /// Runs `D`'s drills on a thread of their own, into the drill folder.
    driller: Driller,
    /// The mouse is the console's (`Config::mouse`), taken again on
    /// resuming.
    mouse: bool,
}

impl Shell<'_> {
    /// Closes the console's connections: the watcher's, then the reader's
    /// and the counter's (read-only on the ledger, whose close would not
    /// checkpoint it), the writer's last.
    fn close(self) {
        let by = Instant::now() + CLOSE_WITHIN;
        drop(self.watch);
        workers::finish([self.reader.close(), self.counter.close()], by);
        workers::finish(self.writer.close(), by);
    }

    fn input(&mut self, event: Event) {
        match event {
            Event::Key(k)
                if k.kind == KeyEventKind::Press
                    && k.code == KeyCode::Char('z')
                    && k.modifiers.contains(KeyModifiers::CONTROL) =>
            {
                self.suspend_asked = true;
            }
            Event::Key(k) => {
                let mode = self.app.mode.key_mode();
                if let Some(intent) =
                    Key::from_event(&k).and_then(|key| self.app.keymap.resolve(mode, key))
                {
                    self.obey(intent);
                }
            }
            // Under --no-mouse the terminal sends none; a sequence typed
            // or pasted that reads as one is not the operator's click.
            Event::Mouse(m) if self.mouse => {
                if let Some(intent) = mouse::intent(&m) {
                    self.obey(intent);
                }
            }
            Event::Resize(w, h) => self.tell(Msg::Resize(w, h)),
            _ => {}
        }
    }

    fn poll_drill_dir(&mut self) {
        if let Some(dir) = self.drill_dir.as_mut() {
            drill_dir::read_in_background(dir.changed(), self.answers.clone());
        }
    }

    fn obey(&mut self, intent: Intent) {
        let effects = app::update(self.app, intent);
        self.dispatch(effects);
    }

    fn tell(&mut self, msg: Msg) {
        // The workers opened the ledger before it was adopted: the reads
        // that follow look again at the tables it has now.
        if matches!(msg, Msg::Adopted(Ok(_))) {
            self.reader.schema_changed();
            self.counter.schema_changed();
        }
        let effects = app::apply(self.app, msg);
        self.dispatch(effects);
    }

    /// Hands each effect to the worker that performs it; answers come
    /// back on the channel.
    fn dispatch(&mut self, effects: Vec<Effect>) {
        let now = self.app.now;
        for effect in effects {
            match effect {
                Effect::Read(read) => self.reader.ask(read, now),
                Effect::Write(Write::Decisions(drafts)) => self.record(drafts),
                Effect::Write(Write::Bulk { template, targets }) => {
                    self.record_bulk(template, targets);
                }
                Effect::Count(Count::Lists(lists)) => self.counter.ask(lists, now),
                Effect::Count(Count::Clusters { query, top }) => {
                    self.counter.group(query, top, now);
                }
                Effect::Count(Count::StopGrouping) => self.counter.stop_grouping(),
                Effect::Probe(ids) => self.probe(ids),
                Effect::Drill(op_type) => {
                    let refused = self.watch.file_problem();
                    let operator = &self.app.operator;
                    self.driller
                        .start(op_type, operator, refused, self.answers.clone());
                }
                Effect::CancelDrill => self.driller.cancel(),
            }
        }
    }

    /// Lookups run on a prober thread of their own (they may take
    /// seconds each), refused like a decision when the path stopped naming
    /// the opened file.
    fn probe(&mut self, ids: Vec<crate::domain::OperationId>) {
        if let Some(why) = self.watch.file_problem() {
            self.tell(Msg::Probe(app::probe::ProbeNews::Finished {
                stopped: Some(format!("{why}; nothing probed")),
            }));
            return;
        }
        let job = crate::console::effects::probe::ProbeJob {
            ledger: self.ledger_path.clone(),
            receivers: self.receivers.clone(),
            operator: self.app.operator.clone(),
            ids,
        };
        crate::console::effects::probe::spawn(job, Utc::now, self.answers.clone());
    }

    /// A bulk decision goes to the writer under the same refusal as one.
    fn record_bulk(
        &mut self,
        template: crate::domain::DecisionDraft,
        targets: Vec<app::bulk::Target>,
    ) {
        let total = targets.len();
        let refused = self.watch.file_problem().or_else(|| {
            (!self.writer.record_bulk(template, targets, self.app.now))
                .then(|| "the writer stopped; reopen the ledger".to_string())
        });
        if let Some(why) = refused {
            self.tell(Msg::BulkProgress(app::bulk::BulkWrite {
                total,
                failed: Some(format!("{why}; nothing written")),
                finished: true,
                ..Default::default()
            }));
        }
    }

    /// Decisions go to the writer, unless the path stopped naming the
    /// opened file since the last poll: then they would land in a file
    /// nobody reads.
    fn record(&mut self, drafts: Vec<crate::domain::DecisionDraft>) {
        let refused = self.watch.file_problem().or_else(|| {
            (!self.writer.record(drafts.clone(), self.app.now))
                .then(|| "the writer stopped; reopen the ledger".to_string())
        });
        if let Some(why) = refused {
            let results = drafts
                .iter()
                .map(|d| app::DecisionResult {
                    op: d.op_id,
                    outcome: app::DecisionOutcome::Failed(format!("{why}; nothing written")),
                })
                .collect();
            self.tell(Msg::DecisionsRecorded(results));
        }
    }
}
