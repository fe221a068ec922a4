//! The mouse through the real binary in a pseudo-terminal: SGR mouse
//! reports (what xterm-compatible terminals send once asked) click rows
//! and tabs and turn the wheel over the list and the detail; the screen is
//! read back through a terminal parser. `--no-mouse` never asks the
//! terminal for the mouse, and a normal run stops asking when it quits.

use crate::kit::pty;

use std::time::Duration;

use crate::kit::*;
use pty::Screen;

const WAIT: Duration = Duration::from_secs(10);

/// Turns on the mouse's click reporting and its SGR encoding.
const MOUSE_ON: [&str; 2] = ["\x1b[?1000h", "\x1b[?1006h"];

/// A left press and its release at the 0-based cell `x`, `y` (SGR counts
/// from 1).
fn click(screen: &mut Screen, x: usize, y: usize) {
    screen.send(&format!(
        "\x1b[<0;{};{}M\x1b[<0;{};{}m",
        x + 1,
        y + 1,
        x + 1,
        y + 1
    ));
}

/// One notch of the wheel, down or up, over the 0-based cell `x`, `y`.
fn wheel(screen: &mut Screen, down: bool, x: usize, y: usize) {
    let button = if down { 65 } else { 64 };
    screen.send(&format!("\x1b[<{button};{};{}M", x + 1, y + 1));
}

/// The operation id on a list row as drawn: `│  7  unknown …`.
fn row_id(line: &str) -> String {
    line.split(|c: char| c == '│' || c.is_whitespace())
        .find(|w| !w.is_empty())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no operation id on {line:?}"))
        .to_string()
}

/// The detail's text rows (120x24, the detail below the list: rows 10 to
/// 21, inside its borders).
fn detail_text(screen: &mut Screen) -> Vec<String> {
    (11..21).map(|row| screen.line(row)).collect()
}

/// Waits until the detail's text differs from `from`, and returns it.
fn detail_moved(screen: &mut Screen, from: &[String]) -> Vec<String> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let now = detail_text(screen);
        if now != from {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the detail did not scroll:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn clicks_select_rows_and_tabs_and_the_wheel_scrolls_the_pane_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let mut screen = Screen::console(&ledger, dir.path(), &[], (120, 24));
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("ord-7790-g", WAIT);
    assert!(screen.mouse_reporting());
    for on in MOUSE_ON {
        assert!(screen.last_written(on).is_some(), "{on:?} never written");
    }

    // The detail opens on the first row; the list keeps five rows on
    // screen (rows 4 to 8) above it.
    screen.send("\r");
    screen.wait_for("detail (J/K scroll)", WAIT);
    let third = row_id(&screen.line(6));
    click(&mut screen, 30, 6);
    screen.wait_for(&format!("#{third} detail"), WAIT);

    // The wheel over the detail scrolls it, and back.
    let top = detail_text(&mut screen);
    wheel(&mut screen, true, 30, 15);
    let scrolled = detail_moved(&mut screen, &top);
    assert!(screen.text().contains(&format!("#{third} detail")));
    wheel(&mut screen, false, 30, 15);
    detail_moved(&mut screen, &scrolled);
    assert_eq!(detail_text(&mut screen), top);

    // The wheel over the list moves its cursor three rows; the detail
    // follows, then comes back with it.
    wheel(&mut screen, true, 30, 5);
    screen.wait_gone(&format!("#{third} detail"), WAIT);
    wheel(&mut screen, false, 30, 5);
    screen.wait_for(&format!("#{third} detail"), WAIT);

    // A click on a tab shows its view.
    let tabs = screen.line(1);
    let all = tabs.find("2 All").expect("the All tab");
    click(&mut screen, tabs[..all].chars().count() + 2, 1);
    screen.wait_for("┌ All ", WAIT);

    // Suspended, the shell gets the mouse back; resumed, the console
    // takes it again.
    suspend_and_resume(&mut screen, "┌ All ");
    assert!(screen.mouse_reporting(), "mouse reporting on again");

    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored());
    assert!(!screen.mouse_reporting(), "mouse reporting off after quit");
    let (on, off) = (
        screen.last_written("\x1b[?1000h"),
        screen.last_written("\x1b[?1000l"),
    );
    assert!(
        off > on,
        "the last word on the mouse turns it off: {on:?} {off:?}"
    );
}

/// Ctrl-z, then SIGCONT: the console gives the terminal back and takes it
/// again, showing `shown`.
fn suspend_and_resume(screen: &mut Screen, shown: &str) {
    screen.send("\x1a");
    screen.wait_alternate(false, WAIT);
    assert!(
        !screen.mouse_reporting(),
        "mouse reporting off while stopped"
    );
    screen.signal("CONT");
    screen.wait_alternate(true, WAIT);
    screen.wait_for(shown, WAIT);
}

/// Runs settle with `args` until its Queue shows, clicks the All tab,
/// suspends and resumes, quits, and says whether any byte it wrote asked for the mouse.
fn asked_for_the_mouse(args: &[&str], env: &[(&str, &str)]) -> bool {
    let mut screen = Screen::start(args, 100, 30, env);
    screen.wait_for("Queue 11 operations", WAIT);
    screen.wait_for("ord-7790-g", WAIT);
    assert!(!screen.mouse_reporting());
    // A mouse report the terminal was never asked for is not a click.
    click(&mut screen, 13, 1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(screen.text().contains("┌ Queue "), "{}", screen.text());
    suspend_and_resume(&mut screen, "┌ Queue ");
    assert!(!screen.mouse_reporting());
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
    assert!(screen.restored());
    MOUSE_ON.iter().any(|on| screen.last_written(on).is_some())
}

#[test]
fn with_no_mouse_the_terminal_is_never_asked_for_the_mouse() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let config = dir.path().to_str().unwrap();
    let console = [ledger.to_str().unwrap(), "--operator", "e2e", "--no-mouse"];
    assert!(!asked_for_the_mouse(
        &console,
        &[("XDG_CONFIG_HOME", config)]
    ));

    let target = dir.path().join("demo-run");
    let demo = ["demo", target.to_str().unwrap(), "--no-mouse"];
    assert!(!asked_for_the_mouse(&demo, &[("XDG_CONFIG_HOME", config)]));
}
