//! Runs one receiver action as a child process: argv without a shell, the
//! operation's fields in `SETTLE_*` variables, stdin empty, stdout and
//! stderr captured up to a cap, and a timeout after which the child's whole
//! process group is killed and the child reaped. It reports what ran and how
//! it ended; what that means (found, refused, ...) is [`super`]'s call.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use super::config::Action;
use super::subject::Subject;

/// Bytes kept of each of stdout and stderr; the rest is read and dropped,
/// so a chatty child never blocks on a full pipe.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// How long to wait, once the group is killed, for the child to be reaped
/// and its pipes to close. A descendant that left the group (`setsid`) may
/// hold a pipe open for ever; its reader is then left behind, not waited on.
const AFTER_KILL: Duration = Duration::from_secs(2);

/// The process groups of the actions running now, so a console that quits
/// while lookups run can end them ([`kill_running`]): each runs in a group
/// of its own, which no signal to the console reaches, and its timeout
/// lives on the thread that dies with the console.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Kills every action still running (their whole process groups). For a
/// process about to exit; an action that ends meanwhile is not hurt.
pub fn kill_running() {
    let running = RUNNING.lock().map(|r| r.clone()).unwrap_or_default();
    for pid in running {
        kill_group(pid);
    }
}

fn track(pid: u32, running: bool) {
    if let Ok(mut r) = RUNNING.lock() {
        if running {
            r.push(pid);
        } else {
            r.retain(|p| *p != pid);
        }
    }
}

/// What ran and how it ended: the probe and the worker record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The command as one line ([`Action::display`]); untrusted text.
    pub command: String,
    pub exit: Exit,
    /// From spawning to the end (or to the kill).
    pub duration: Duration,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// How an action ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal it did not send itself ended it (not the timeout's kill).
    Signal(i32),
    /// It (or something in its process group holding its output) ran past
    /// its timeout; the group was killed.
    TimedOut(Duration),
    /// It could not be started (no such program, not executable, ...).
    NotStarted(String),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
            Exit::TimedOut(t) => write!(f, "timed out after {} s (killed)", seconds(*t)),
            Exit::NotStarted(why) => write!(f, "could not start: {why}"),
        }
    }
}

/// Up to [`OUTPUT_CAP`] bytes of one stream, as text (invalid UTF-8
/// replaced); raw, so untrusted: sanitise before showing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub text: String,
    /// More was written than was kept.
    pub cut: bool,
}

impl Ran {
    fn not_started(action: &Action, why: String) -> Ran {
        Ran {
            command: action.display(),
            exit: Exit::NotStarted(why),
            duration: Duration::ZERO,
            stdout: Captured::default(),
            stderr: Captured::default(),
        }
    }
}

/// One event from the threads around a running child.
enum Event {
    Stdout(Captured),
    Stderr(Captured),
    Exited(std::io::Result<ExitStatus>),
}

/// Runs `action` for `subject`; `attempt` is set for a retry
/// (`SETTLE_ATTEMPT`). Blocks until the child has ended or been killed.
pub fn run(action: &Action, subject: &Subject, attempt: Option<i64>) -> Ran {
    run_with(action, subject, attempt, &[], None)
}

/// [`run`] with more variables (a drill's `SETTLE_DRILL_FAULT`) and a
/// caller's own limit: the group is killed at `limit` when that comes
/// before the action's timeout, as a caller that gives up (or crashes)
/// mid-call would leave it.
pub fn run_with(
    action: &Action,
    subject: &Subject,
    attempt: Option<i64>,
    env: &[(&str, String)],
    limit: Option<Duration>,
) -> Ran {
    let Some((program, args)) = action.argv.split_first() else {
        return Ran::not_started(action, "the command is empty".to_string());
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .env("SETTLE_OP_ID", subject.op_id.to_string())
        .env("SETTLE_ACCOUNT", &subject.account)
        .env("SETTLE_OP_TYPE", &subject.op_type)
        .env("SETTLE_KEY", &subject.key)
        .env("SETTLE_FINGERPRINT", &subject.fingerprint)
        .env("SETTLE_PARAMS", subject.params.as_deref().unwrap_or(""))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so the timeout kills what it started too
        // (a `sh -c` pipeline, a curl under a wrapper), not only itself.
        .process_group(0);
    match attempt {
        Some(n) => command.env("SETTLE_ATTEMPT", n.to_string()),
        // Never one inherited from the caller's environment.
        None => command.env_remove("SETTLE_ATTEMPT"),
    };
    command.env_remove("SETTLE_DRILL_FAULT");
    for (name, value) in env {
        command.env(name, value);
    }
    let timeout = limit.map_or(action.timeout, |l| l.min(action.timeout));
    let started = Instant::now();
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Ran::not_started(action, spawn_error(program, &e)),
    };
    let pid = child.id();
    track(pid, true);
    let (exit, stdout, stderr) = supervise(child, timeout, started);
    track(pid, false);
    Ran {
        command: action.display(),
        exit,
        duration: started.elapsed(),
        stdout,
        stderr,
    }
}

/// Waits for `child` to exit and its output to close, killing its process
/// group at the deadline. Three threads (two readers and a waiter) report on
/// one channel, so nothing polls.
fn supervise(mut child: Child, timeout: Duration, started: Instant) -> (Exit, Captured, Captured) {
    let (tx, rx) = mpsc::channel();
    // A stream that is not piped (never, as spawned above) counts as read.
    let (mut stdout, mut stderr) = (Some(Captured::default()), Some(Captured::default()));
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send(Event::Stdout(drain(out))));
        stdout = None;
    }
    if let Some(err) = child.stderr.take() {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send(Event::Stderr(drain(err))));
        stderr = None;
    }
    let pid = child.id();
    std::thread::spawn(move || tx.send(Event::Exited(child.wait())));

    let mut status = None;
    let mut timed_out = false;
    let deadline = started + timeout;
    while status.is_none() || stdout.is_none() || stderr.is_none() {
        let wait = if timed_out {
            // Killed: give the reaping and the pipes a moment, no more.
            (deadline + AFTER_KILL).saturating_duration_since(Instant::now())
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        match rx.recv_timeout(wait) {
            Ok(Event::Stdout(c)) => stdout = Some(c),
            Ok(Event::Stderr(c)) => stderr = Some(c),
            Ok(Event::Exited(s)) => status = Some(s),
            Err(mpsc::RecvTimeoutError::Timeout) if !timed_out => {
                timed_out = true;
                kill_group(pid);
            }
            Err(_) => break,
        }
    }
    let exit = if timed_out {
        Exit::TimedOut(timeout)
    } else {
        match status {
            Some(Ok(s)) => match (s.code(), s.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(signal)) => Exit::Signal(signal),
                (None, None) => Exit::NotStarted("no exit status".to_string()),
            },
            Some(Err(e)) => Exit::NotStarted(format!("waiting for it failed: {e}")),
            None => Exit::NotStarted("no exit status".to_string()),
        }
    };
    (exit, stdout.unwrap_or_default(), stderr.unwrap_or_default())
}

/// SIGKILL to the child's process group (its pgid is its pid, see
/// `process_group(0)`). A group already gone is fine.
fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Reads `stream` to its end, keeping the first [`OUTPUT_CAP`] bytes.
fn drain(mut stream: impl Read) -> Captured {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut cut = false;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = OUTPUT_CAP - kept.len();
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Captured {
        text: String::from_utf8_lossy(&kept).into_owned(),
        cut,
    }
}

/// Why `program` did not start, in words that say what to fix.
fn spawn_error(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{program}: no such program (give a full path, or put it on PATH)")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("{program}: not executable (chmod +x it)")
        }
        _ => format!("{program}: {e}"),
    }
}

/// `d` in seconds, without trailing zeros: "10", "0.5".
fn seconds(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
