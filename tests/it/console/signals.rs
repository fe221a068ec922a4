//! Signals through the real binary in a pseudo-terminal: TERM, INT, HUP and
//! QUIT give the terminal back (cooked modes, main screen, cursor shown, no
//! mouse reporting) and exit with 128 + the signal; TSTP suspends with the
//! terminal given back, CONT takes it again.

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(10);

fn console(dir: &std::path::Path) -> Screen {
    let ledger = demo_ledger(dir);
    let mut screen = Screen::console(&ledger, dir, &[], (100, 30));
    screen.wait_for("Queue 11 operations", WAIT);
    assert!(screen.cooked_modes().is_empty(), "raw mode while running");
    assert!(screen.mouse_reporting(), "mouse reporting while running");
    screen
}

#[test]
fn a_stop_signal_gives_the_terminal_back_and_exits_128_plus_the_signal() {
    for (signal, status) in [("TERM", 143), ("INT", 130), ("HUP", 129), ("QUIT", 131)] {
        let dir = tempfile::tempdir().unwrap();
        let mut screen = console(dir.path());
        screen.signal(signal);
        assert_eq!(screen.wait_exit_code(WAIT), status, "SIG{signal}");
        assert!(screen.restored(), "SIG{signal}: main screen, cursor shown");
        assert!(
            !screen.mouse_reporting(),
            "SIG{signal}: mouse reporting off"
        );
        assert_eq!(screen.cooked_modes(), ["echo", "icanon"], "SIG{signal}");
    }
}

#[test]
fn suspending_gives_the_terminal_back_and_continuing_redraws_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut screen = console(dir.path());
    screen.signal("TSTP");
    screen.wait_alternate(false, WAIT);
    assert!(screen.restored());
    assert!(!screen.mouse_reporting());
    assert_eq!(screen.cooked_modes(), ["echo", "icanon"]);

    screen.signal("CONT");
    screen.wait_alternate(true, WAIT);
    screen.wait_for("Queue 11 operations", WAIT);
    assert!(screen.cooked_modes().is_empty(), "raw mode again");

    // Ctrl-z reaches a raw terminal as a key, not a signal: same result.
    screen.send("\x1a");
    screen.wait_alternate(false, WAIT);
    assert_eq!(screen.cooked_modes(), ["echo", "icanon"]);
    screen.signal("CONT");
    screen.wait_alternate(true, WAIT);
    screen.wait_for("Queue 11 operations", WAIT);
    screen.send("q");
    assert_eq!(screen.wait_exit_code(WAIT), 0);
    assert!(screen.restored());
}
