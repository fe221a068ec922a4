//! The console end to end: the real binary in a pseudo-terminal, real keys,
//! the screen read back through a terminal parser, and the ledger checked
//! with SQL afterwards. Also checks that another process's write shows up
//! without a key press, and that quitting restores the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const BIN: &str = env!("CARGO_BIN_EXE_settle");

struct Screen {
    parser: vt100::Parser,
    bytes: mpsc::Receiver<Vec<u8>>,
}

impl Screen {
    fn pump(&mut self) {
        while let Ok(chunk) = self.bytes.try_recv() {
            self.parser.process(&chunk);
        }
    }

    fn text(&mut self) -> String {
        self.pump();
        self.parser.screen().contents()
    }

    /// Waits until the screen shows `what`, or fails with the screen.
    fn wait_for(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.text();
            if text.contains(what) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {what:?}; screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn sql(ledger: &Path, query: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(ledger).unwrap();
    let mut stmt = conn.prepare(query).unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn decide_in_the_console_and_see_another_process_write_live() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let made = Command::new(BIN)
        .args(["demo", "--no-console"])
        .arg(&demo)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let ledger = demo.join("ledger.db");

    let pty = native_pty_system();
    let pair = pty
        .openpty(PtySize {
            rows: 32,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(BIN);
    cmd.arg(&ledger);
    cmd.args(["--operator", "e2e-operator"]);
    cmd.env("TERM", "xterm-256color");
    cmd.env("XDG_CONFIG_HOME", dir.path());
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut keys = pair.master.take_writer().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = Screen {
        parser: vt100::Parser::new(32, 120, 0),
        bytes: rx,
    };
    let mut press = |text: &str| {
        keys.write_all(text.as_bytes()).unwrap();
        keys.flush().unwrap();
        std::thread::sleep(Duration::from_millis(150));
    };

    screen.wait_for("Queue 11 operations");
    screen.wait_for("unknown 6");
    assert!(screen.parser.screen().alternate_screen());

    // The oldest queue row is operation 1: a committed effect, no reply.
    press("G");
    press("a");
    screen.wait_for("Record applied");
    screen.wait_for("result id report-8812");
    press("\r");
    screen.wait_for("recorded #1 applied (unknown → completed)");
    screen.wait_for("Queue 10 operations");

    // Another process decides: the console shows it without a key press.
    let other = Command::new(BIN)
        .arg("decide")
        .arg(&ledger)
        .args(["2", "--retry-same-key", "--operator", "someone-else"])
        .output()
        .unwrap();
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    screen.wait_for("Queue 9 operations");
    screen.wait_for("changed");

    press("q");
    let status = child.wait().unwrap();
    assert!(status.success());
    screen.pump();
    assert!(
        !screen.parser.screen().alternate_screen(),
        "terminal restored"
    );

    let decisions = sql(
        &ledger,
        "SELECT operator || ' ' || decision || ' ' || op_id || ' ' || COALESCE(result_id, '')
         FROM decisions WHERE operator LIKE 'e2e%' ORDER BY id",
    );
    assert_eq!(decisions, vec!["e2e-operator applied 1 report-8812"]);
    let state = sql(&ledger, "SELECT state FROM operations WHERE id = 1");
    assert_eq!(state, vec!["completed"]);
}
