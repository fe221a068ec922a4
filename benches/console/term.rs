//! A program in a pseudo-terminal, watched as a user watches it: bytes go
//! through a vt100 parser, and a figure ends when a predicate over the parsed
//! screen holds (never on a marker in the raw byte stream). Also reads the
//! process's memory and CPU from /proc. Knows nothing about settle's code.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub const COLS: u16 = 200;
pub const ROWS: u16 = 60;

pub struct Term {
    parser: vt100::Parser,
    output: Receiver<Vec<u8>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
    pub pid: u32,
    pub started: Instant,
}

impl Term {
    pub fn spawn(program: &Path, args: &[&str]) -> Term {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        cmd.env("SETTLE_OPERATOR", "bench");
        cmd.env_remove("NO_COLOR");
        let started = Instant::now();
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let pid = child.process_id().unwrap_or(0);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Term {
            parser: vt100::Parser::new(ROWS, COLS, 0),
            output,
            writer,
            child,
            _master: pair.master,
            pid,
            started,
        }
    }

    /// Feeds what arrived within `wait` to the parser; true if anything did.
    fn pump(&mut self, wait: Duration) -> bool {
        match self.output.recv_timeout(wait) {
            Ok(bytes) => {
                self.parser.process(&bytes);
                while let Ok(bytes) = self.output.try_recv() {
                    self.parser.process(&bytes);
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Waits until `pred` holds on the screen; the instant it was seen, or
    /// None after `timeout`. The screen is checked after every chunk.
    pub fn until(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&vt100::Screen) -> bool,
    ) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(self.parser.screen()) {
                return Some(Instant::now());
            }
            if Instant::now() > deadline {
                return None;
            }
            self.pump(Duration::from_millis(2));
        }
    }

    /// Lets output arrive for `d` without looking for anything.
    pub fn settle_for(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end {
            self.pump(Duration::from_millis(5));
        }
    }

    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// Sends raw key bytes; returns the instant they were written.
    pub fn key(&mut self, bytes: &str) -> Instant {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        Instant::now()
    }

    /// Asks the program to quit with `q` and waits; kills it if it will not.
    pub fn quit(mut self) {
        let _ = self.key("\x1b");
        self.settle_for(Duration::from_millis(50));
        let _ = self.key("q");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            self.pump(Duration::from_millis(20));
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
        }
        // Said, because a killed settle may leave its WAL behind and change
        // what the next figure opens.
        eprintln!("  (pid {} did not exit within 10 s of q; killed)", self.pid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Resident memory in MiB (VmRSS).
pub fn rss_mib(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// utime + stime in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    cpu_split(pid).map(|(user, system)| user + system)
}

/// `pid`'s CPU ticks so far: in its own code, and in the kernel's for it
/// (reading pages the cache lost is the kernel's).
fn cpu_split(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields count from after its ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// CPU used by `pid` over `d` as [`cpu_percent`] measures it, said with
/// the kernel's share: "12.0 % (system 3.0 %)".
pub fn cpu_percent_text(term: &mut Term, d: Duration) -> Option<String> {
    let (u0, s0) = cpu_split(term.pid)?;
    let t = Instant::now();
    term.settle_for(d);
    let (u1, s1) = cpu_split(term.pid)?;
    let pct = |ticks: u64| ticks as f64 / t.elapsed().as_secs_f64();
    Some(format!(
        "{:.1} % (system {:.1} %)",
        pct(u1 + s1 - u0 - s0),
        pct(s1 - s0)
    ))
}

/// CPU used by `pid` over `d`, in percent of one core, while `term` keeps
/// draining its output (a full pty would stall the program).
pub fn cpu_percent(term: &mut Term, d: Duration) -> Option<f64> {
    let a = cpu_ticks(term.pid)?;
    let t = Instant::now();
    term.settle_for(d);
    let b = cpu_ticks(term.pid)?;
    // Linux's USER_HZ is 100 on every platform this runs on.
    Some((b - a) as f64 / 100.0 / t.elapsed().as_secs_f64() * 100.0)
}
