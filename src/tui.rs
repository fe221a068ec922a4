//! The shell: the only module that touches the terminal and the clock, and
//! the owner of the screen thread's ledger connection. It turns terminal
//! events into intents through the keymap, feeds them to the pure
//! [`app::update`], has [`effects`] perform what it asks and feeds the
//! answers back through [`app::apply`]. Counts go to the [`Counter`]
//! worker, so a full scan never blocks the screen; `PRAGMA data_version` is
//! polled on the input timeout (never a busy loop) so other processes'
//! writes show within a second. The terminal is restored on quit, on error
//! and on panic.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, MouseEventKind,
};
use ratatui::crossterm::execute;

use crate::app::{self, App, Effect, Intent, Msg, View};
use crate::config::Config;
use crate::counter::Counter;
use crate::effects::{self, read_drill};
use crate::error::{Error, Result};
use crate::keymap::{Key, Keymap};
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
    app.drills.files = drills.iter().map(|p| read_drill(p)).collect();
    // The missing operator comes last so it is what the status line shows:
    // it is the one the operator can fix.
    let opened: Vec<Msg> = [
        report.upgraded.map(Msg::Notice),
        report
            .read_only_reason
            .map(|r| Msg::Notice(format!("read-only: {r}"))),
        report.not_adopted.map(Msg::Notice),
        config.read_only_reason.clone().map(Msg::Notice),
    ]
    .into_iter()
    .flatten()
    .collect();
    let counter = Counter::spawn(ledger_path.to_path_buf());

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

fn event_loop(
    terminal: &mut DefaultTerminal,
    ledger: &mut Ledger,
    app: &mut App,
    counter: &Counter,
    opened: Vec<Msg>,
) -> Result<()> {
    let draw_error = |e| terminal_error("drawing", e);
    let size = terminal.size().map_err(draw_error)?;
    let mut shell = Shell {
        app,
        ledger,
        counter,
    };
    shell.tell(Msg::Resize(size.width, size.height));
    shell.obey(Intent::ShowView(View::Queue));
    for notice in opened {
        shell.tell(notice);
    }
    let mut seen_version = shell.ledger.data_version().ok();
    let mut next_poll = Instant::now() + POLL_EVERY;
    loop {
        shell.tell(Msg::Tick(Utc::now()));
        terminal
            .draw(|f| ui::render(shell.app, f))
            .map_err(draw_error)?;
        if shell.app.quit {
            return Ok(());
        }
        let wait = next_poll.saturating_duration_since(Instant::now());
        if event::poll(wait).map_err(|e| terminal_error("reading the keyboard", e))? {
            match event::read().map_err(|e| terminal_error("reading the keyboard", e))? {
                Event::Key(k) => {
                    let mode = shell.app.mode.key_mode();
                    if let Some(intent) =
                        Key::from_event(&k).and_then(|key| shell.app.keymap.resolve(mode, key))
                    {
                        shell.obey(intent);
                    }
                }
                Event::Mouse(m) => match m.kind {
                    MouseEventKind::ScrollDown => shell.obey(Intent::Scroll(3)),
                    MouseEventKind::ScrollUp => shell.obey(Intent::Scroll(-3)),
                    _ => {}
                },
                Event::Resize(w, h) => shell.tell(Msg::Resize(w, h)),
                _ => {}
            }
        }
        if Instant::now() >= next_poll {
            next_poll = Instant::now() + POLL_EVERY;
            match shell.ledger.data_version() {
                Ok(v) => {
                    if shell.app.live_error.is_some() {
                        shell.tell(Msg::LiveRestored);
                    }
                    if Some(v) != seen_version {
                        seen_version = Some(v);
                        shell.tell(Msg::LedgerChanged);
                    }
                }
                // Said once, not every poll: the status line keeps it.
                Err(e) if shell.app.live_error.is_none() => {
                    shell.tell(Msg::LiveLost(e.to_string()));
                }
                Err(_) => {}
            }
        }
        while let Some(answer) = shell.counter.answer() {
            shell.tell(answer);
        }
    }
}

/// The model and what performs its effects, while the console runs.
struct Shell<'a> {
    app: &'a mut App,
    ledger: &'a mut Ledger,
    counter: &'a Counter,
}

impl Shell<'_> {
    fn obey(&mut self, intent: Intent) {
        let effects = app::update(self.app, intent);
        self.settle(effects);
    }

    fn tell(&mut self, msg: Msg) {
        let effects = app::apply(self.app, msg);
        self.settle(effects);
    }

    /// Performs `effects` and feeds their answers back, in order, until
    /// nothing is left to do. Counts go to the worker instead.
    fn settle(&mut self, effects: Vec<Effect>) {
        let mut answers = VecDeque::new();
        self.perform(effects, &mut answers);
        while let Some(msg) = answers.pop_front() {
            let effects = app::apply(self.app, msg);
            self.perform(effects, &mut answers);
        }
    }

    fn perform(&mut self, effects: Vec<Effect>, answers: &mut VecDeque<Msg>) {
        for effect in effects {
            match effect {
                Effect::Count(lists) => self.counter.ask(lists, self.app.now),
                effect => answers.extend(effects::perform(self.ledger, self.app.now, effect)),
            }
        }
    }
}
