//! A filter on a ledger nobody adopted yet, in the real binary: the
//! ledger has no index for it, so the console scans it a slice of ids at
//! a time. Under the filter's name the list never shows a row of another
//! account, says how far the scan got, fills in as matches are found, and
//! the next key cancels the scan.

use crate::kit::pty;

use crate::kit::*;
use pty::Screen;
use std::path::Path;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);
const OPERATIONS: i64 = 300_000;

/// A service's ledger (no settle index) of 300,000 operations: account
/// `acct-NNN` and type `type-NNN` are the id modulo 500, except three old
/// operations of `acct-rare` and `type-rare`, so finding them means
/// reading almost every id. Types are filtered on: the service's own
/// index starts with the account, and serves an account's filter.
fn service_ledger(path: &Path) {
    let conn = sql(path);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {OPERATIONS})
         INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
             max_attempts, created_at, updated_at, version)
         SELECT i,
             CASE WHEN i IN (7, 11, 13) THEN 'acct-rare' ELSE printf('acct-%03d', i % 500) END,
             CASE WHEN i IN (7, 11, 13) THEN 'type-rare' ELSE printf('type-%03d', i % 500) END,
             printf('k-%06d', i), 'sha256:00', 'unknown', 3,
             '2026-11-06T10:00:00Z', '2026-11-06T10:00:00Z', 1
         FROM n;"
    ))
    .unwrap();
}

/// The account of each row the list shows: the account column of every
/// line between the table's header and its bottom border.
fn listed_accounts(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(header) = lines
        .iter()
        .position(|l| l.contains(" id ") && l.contains("account"))
    else {
        return Vec::new();
    };
    lines[header + 1..]
        .iter()
        .take_while(|l| !l.starts_with('└'))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("acct-")))
        .map(str::to_string)
        .collect()
}

/// The screen once a frame is drawn whole: read until four reads in a
/// row agree, so a frame caught half written (on a busy machine a frame
/// may arrive in pieces) is never taken for what it shows.
fn settled(screen: &mut Screen) -> String {
    let mut last = screen.text();
    let mut same = 0;
    while same < 3 {
        let now = screen.text();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

/// Samples the screen until `until` holds, asserting on every sample
/// under `filter`'s name that the list shows only `account`'s rows;
/// returns the last screen. A count "so far" is never below the rows
/// shown.
fn sample_until(
    screen: &mut Screen,
    (filter, account): (&str, &str),
    mut until: impl FnMut(&str) -> bool,
) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = settled(screen);
        // Keys may arrive one by one: the filters typed on the way (free
        // text such as "type") match other rows, under their own name.
        let named = text.contains(&format!("filter: {filter}"));
        let so_far = text
            .split(" so far")
            .next()
            .filter(|_| named && text.contains(" so far"))
            .and_then(|before| before.rsplit(' ').next())
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = so_far {
            assert!(n >= listed_accounts(&text).len(), "{text}");
        }
        for shown in listed_accounts(&text).into_iter().filter(|_| named) {
            assert_eq!(
                shown, account,
                "a row of another account under the filter:\n{text}"
            );
        }
        if until(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "timed out; the screen:\n{text}");
    }
}

#[test]
fn a_filter_on_an_unadopted_ledger_shows_only_its_matches_as_the_scan_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("service.db");
    service_ledger(&ledger);
    let mut screen = Screen::console(&ledger, dir.path(), &["--read-only"], (80, 24));
    screen.wait_for("k-300000", WAIT);

    // A common account: the first slice fills the screen and the scan
    // waits there, saying how far it got.
    screen.send("/type:type-007\r");
    let text = sample_until(&mut screen, ("type:type-007", "acct-007"), |t| {
        t.contains("so far") && listed_accounts(t).len() >= 10
    });
    assert!(text.contains("scanning "), "{text}");
    assert!(text.contains("`settle adopt` adds the indexes"), "{text}");
    assert!(text.contains("k-299507"), "the newest match first:\n{text}");

    // Paging down goes on from where the scan stopped.
    for _ in 0..8 {
        screen.send("\x1b[6~");
    }
    let text = sample_until(&mut screen, ("type:type-007", "acct-007"), |t| {
        t.contains("k-2")
    });
    assert!(
        !text.contains("k-299507"),
        "paged past the first screen:\n{text}"
    );

    // A rare account: rows of acct-007 go at once, and every frame under
    // its name shows only its rows until the scan has found all three.
    // Its progress text is not awaited here: the screen is read once a
    // frame has settled, and a whole scan of this ledger may draw all its
    // frames between two reads on a loaded machine (the common account
    // above shows the progress text; the snapshots show each state).
    screen.send("\x1b");
    screen.send("/type:type-rare\r");
    let text = sample_until(&mut screen, ("type:type-rare", "acct-rare"), |t| {
        t.contains("3 operations") && listed_accounts(t).len() == 3 && !t.contains("scanning")
    });
    assert!(
        text.contains("3 Queue 3") || text.contains("Queue 3"),
        "{text}"
    );

    // The next key cancels a scan: Esc while it reads goes back to the
    // whole queue, and no scan comes back.
    screen.send("/type:type-none");
    screen.send("\x1b");
    let text = screen.wait_for("k-300000", WAIT);
    assert!(!text.contains("filter:"), "{text}");
    let until = Instant::now() + Duration::from_millis(600);
    while Instant::now() < until {
        let text = screen.text();
        assert!(
            !text.contains("scanning"),
            "a cancelled scan went on:\n{text}"
        );
    }
    screen.send("q");
    assert!(screen.wait_exit(WAIT));
}
