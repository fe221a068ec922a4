//! Runs the real `settle` binary in a pseudo-terminal and reads its screen
//! back through a terminal parser (vt100), as an operator would see it.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub struct Screen {
    parser: vt100::Parser,
    /// Every byte settle wrote, as written: modes a parser keeps no trace
    /// of once they are turned off.
    written: Vec<u8>,
    output: Receiver<Vec<u8>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Screen {
    /// The console on `ledger` as the operator `e2e-operator`, with `extra`
    /// flags, in a `cols` x `rows` terminal. `XDG_CONFIG_HOME` is the
    /// test's own folder, so no user keymap of the machine's applies.
    pub fn console(
        ledger: &std::path::Path,
        config: &std::path::Path,
        extra: &[&str],
        (cols, rows): (u16, u16),
    ) -> Screen {
        let mut args = vec![ledger.to_str().unwrap(), "--operator", "e2e-operator"];
        args.extend_from_slice(extra);
        Screen::start(
            &args,
            cols,
            rows,
            &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
        )
    }

    /// Starts settle with `args` in a `cols` x `rows` terminal.
    pub fn start(args: &[&str], cols: u16, rows: u16, env: &[(&str, &str)]) -> Screen {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_settle"));
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
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
        Screen {
            parser: vt100::Parser::new(rows, cols, 0),
            written: Vec::new(),
            output,
            writer,
            child,
            _master: pair.master,
        }
    }

    fn pump(&mut self, wait: Duration) {
        if let Ok(bytes) = self.output.recv_timeout(wait) {
            self.parser.process(&bytes);
            self.written.extend_from_slice(&bytes);
            while let Ok(bytes) = self.output.try_recv() {
                self.parser.process(&bytes);
                self.written.extend_from_slice(&bytes);
            }
        }
    }

    /// The screen's text, one line per row.
    pub fn text(&mut self) -> String {
        self.pump(Duration::from_millis(10));
        self.parser.screen().contents()
    }

    /// Waits until the screen shows `needle`; panics with the screen after
    /// `timeout`.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump(Duration::from_millis(50));
            let text = self.parser.screen().contents();
            if text.contains(needle) {
                return text;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {needle:?}; the screen:\n{text}");
            }
        }
    }

    /// Waits until `needle` is gone from the screen.
    pub fn wait_gone(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump(Duration::from_millis(50));
            let text = self.parser.screen().contents();
            if !text.contains(needle) {
                return text;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {needle:?} to go; the screen:\n{text}");
            }
        }
    }

    /// Filters the queue to the one operation with `key` and keeps the
    /// filter.
    pub fn only(&mut self, key: &str, timeout: Duration) {
        self.send("/");
        for c in format!("key:{key}").chars() {
            self.send(&c.to_string());
        }
        self.send("\r");
        self.wait_for("Queue 1 operation ", timeout);
    }

    /// Types raw bytes (keys as the terminal sends them).
    pub fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        // Give the app one poll cycle to take the key before the next one.
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Waits for the process to exit; returns its success.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump(Duration::from_millis(20));
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "settle did not exit; the screen:\n{}",
                    self.parser.screen().contents()
                );
            }
        }
    }

    /// Whether the terminal is back in its normal state (no alternate
    /// screen, cursor shown).
    pub fn restored(&mut self) -> bool {
        self.pump(Duration::from_millis(50));
        let s = self.parser.screen();
        !s.alternate_screen() && !s.hide_cursor()
    }
}

/// Signals, exit statuses and terminal modes: what a console killed or
/// stopped leaves behind in the terminal.
impl Screen {
    pub fn pid(&self) -> u32 {
        self.child.process_id().unwrap()
    }

    /// Sends `signal` (a name `kill` knows: TERM, TSTP, …) to settle.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// Waits for the process to exit; returns its exit status.
    pub fn wait_exit_code(&mut self, timeout: Duration) -> u32 {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump(Duration::from_millis(20));
            if let Some(status) = self.child.try_wait().unwrap() {
                self.pump(Duration::from_millis(20));
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "settle did not exit; the screen:\n{}",
                    self.parser.screen().contents()
                );
            }
        }
    }

    /// Waits until the screen is (or is no longer) the alternate one.
    pub fn wait_alternate(&mut self, on: bool, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.parser.screen().alternate_screen() != on {
            self.pump(Duration::from_millis(20));
            assert!(
                Instant::now() < deadline,
                "alternate screen never turned {}",
                if on { "on" } else { "off" }
            );
        }
    }

    /// Where settle last wrote `sequence` (an escape sequence), in the
    /// bytes written so far.
    pub fn last_written(&mut self, sequence: &str) -> Option<usize> {
        self.pump(Duration::from_millis(20));
        let needle = sequence.as_bytes();
        self.written
            .windows(needle.len())
            .rposition(|w| w == needle)
    }

    /// The screen's row `row` (0 is the top), as text.
    pub fn line(&mut self, row: usize) -> String {
        self.text().lines().nth(row).unwrap_or_default().to_string()
    }

    /// Whether the program asks the terminal for mouse events.
    pub fn mouse_reporting(&mut self) -> bool {
        self.pump(Duration::from_millis(20));
        self.parser.screen().mouse_protocol_mode() != vt100::MouseProtocolMode::None
    }

    /// The pty's local modes that raw mode turns off, as `stty` names
    /// them: ["echo", "icanon"] on a terminal given back intact.
    pub fn cooked_modes(&self) -> Vec<&'static str> {
        let termios = self._master.get_termios().unwrap();
        let flags = format!("{:?}", termios.local_flags);
        let words: Vec<&str> = flags
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .collect();
        [("ECHO", "echo"), ("ICANON", "icanon")]
            .into_iter()
            .filter(|(flag, _)| words.contains(flag))
            .map(|(_, name)| name)
            .collect()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
