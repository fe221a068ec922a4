//! The read model beside the ledger: what a service writes, with settle
//! running or not, reaches it; a missing, foreign or unreadable one is
//! built again, never trusted; and keeping it never takes the ledger's
//! write lock.

use std::time::Duration;

use rusqlite::Connection;

use super::{Ledger, adopted, insert_attempt, insert_op, now};
use crate::domain::{Seek, State};
use crate::query::Query;
use crate::store::backend::{ReadModel as _, Reads as _, Session as _};
use crate::store::sqlite::model::sidecar;
use crate::store::{Access, Waiter};

fn keyed(ledger: &Ledger, key: &str) -> Vec<crate::domain::OperationRow> {
    ledger
        .page(
            &Query::parse(&format!("key:{key}")).unwrap(),
            Seek::First,
            5,
            now(),
        )
        .unwrap()
}

fn event(service: &Connection, op: i64, event: &str) {
    service
        .execute(
            "INSERT INTO events (op_id, at, event) VALUES (?1, '2026-01-01T00:00:00Z', ?2)",
            rusqlite::params![op, event],
        )
        .unwrap();
}

/// An adopted ledger of `n` operations, its first page as settle showed
/// it, and nothing left open on it.
fn closed_after_a_look(
    n: i64,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<crate::domain::OperationRow>,
) {
    let (dir, ledger, _service) = adopted(n);
    let path = ledger.path().to_path_buf();
    let rows = ledger
        .page(&Query::default(), Seek::First, 20, now())
        .unwrap();
    (dir, path, rows)
}

#[test]
fn what_a_service_wrote_while_settle_was_away_shows_on_the_next_open() {
    let (_dir, ledger, service) = adopted(10);
    let path = ledger.path().to_path_buf();
    drop(ledger);
    insert_op(&service, 11, "acct-away", "k-away", "unknown", None);
    insert_attempt(&service, 11, 1, Some("HTTP 502"));
    event(&service, 11, "timeout");
    service
        .execute("UPDATE operations SET state = 'exhausted' WHERE id = 5", [])
        .unwrap();
    event(&service, 5, "gave up");
    for access in [Access::ReadOnly, Access::ReadWrite] {
        let (ledger, report) = Ledger::open(&path, access).unwrap();
        assert_eq!(report.not_adopted, None);
        let row = &keyed(&ledger, "k-away")[0];
        assert_eq!(
            (
                row.attempts,
                row.last_error.as_deref(),
                row.last_event.as_deref()
            ),
            (1, Some("HTTP 502"), Some("timeout"))
        );
        let exhausted = ledger
            .page(
                &Query::parse("state:exhausted").unwrap(),
                Seek::First,
                20,
                now(),
            )
            .unwrap();
        assert!(exhausted.iter().any(|r| r.id.0 == 5), "{exhausted:?}");
        let counts = ledger.state_counts(now()).unwrap();
        assert_eq!(counts.total, 11);
        assert_eq!(counts.get(&State::Exhausted), 3);
    }
}

#[test]
fn a_plain_sql_write_shows_on_the_next_read_and_never_under_a_filter_it_fails() {
    let (_dir, ledger, service) = adopted(10);
    let unknown = Query::parse("state:unknown").unwrap();
    let before = ledger.page(&unknown, Seek::First, 20, now()).unwrap();
    assert!(before.iter().any(|r| r.id.0 == 5));
    // Moved without any event: the read model still says unknown until the
    // sweep, yet the row leaves the filter at once.
    service
        .execute("UPDATE operations SET state = 'completed' WHERE id = 5", [])
        .unwrap();
    let after = ledger.page(&unknown, Seek::First, 20, now()).unwrap();
    assert!(after.iter().all(|r| r.state == State::Unknown), "{after:?}");
    insert_op(&service, 12, "acct-live", "k-live", "unknown", None);
    event(&service, 12, "sent");
    let row = &keyed(&ledger, "k-live")[0];
    assert_eq!(row.last_event.as_deref(), Some("sent"));
    let detail = crate::store::backend::History::detail(&ledger, row.id).unwrap();
    assert_eq!(detail.events.len(), 1);
    // An event the keeper has not read yet is in the history too.
    event(&service, 12, "acked");
    let detail = crate::store::backend::History::detail(&ledger, row.id).unwrap();
    assert_eq!(detail.events.len(), 2);
}

/// The sweep, which finds what a service changed without writing an
/// event, goes on in the reads nobody waits on (the console's counts) and
/// never in those the operator waits on: a slice of it was 5 ms of every
/// page, key and first frame at 10M.
#[test]
fn the_sweep_is_left_to_the_reads_nobody_waits_on() {
    let (_dir, ledger, service) = adopted(10);
    service
        .execute("UPDATE operations SET state = 'completed' WHERE id = 5", [])
        .unwrap();
    let open = |waiter| {
        let (look, _) = Ledger::open(ledger.path(), Access::ReadOnly).unwrap();
        look.catch_up_in_steps(waiter);
        look
    };
    let unknown = |l: &Ledger| l.state_counts(now()).unwrap().get(&State::Unknown);
    let operator = open(Waiter::Operator);
    for _ in 0..3 {
        assert_eq!(unknown(&operator), 2, "the operator's reads do not sweep");
    }
    let counts = open(Waiter::Background);
    assert_eq!(unknown(&counts), 1, "a small ledger is swept in one read");
    assert_eq!(unknown(&operator), 1, "and the operator sees what it found");
}

#[test]
fn a_missing_foreign_or_unreadable_read_model_is_built_again() {
    let (_dir, path, rows) = closed_after_a_look(10);
    let (other_dir, other, _) = adopted(3);
    let foreign = sidecar(other.path());
    drop(other);

    std::fs::remove_file(sidecar(&path)).unwrap();
    let (look, report) = Ledger::open(&path, Access::ReadOnly).unwrap();
    assert!(report.not_adopted.is_some(), "a look shows it without one");
    assert!(look.model.borrow().is_none());
    assert_eq!(
        look.page(&Query::default(), Seek::First, 20, now())
            .unwrap(),
        rows
    );
    drop(look);
    let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    assert_eq!(
        ledger
            .page(&Query::default(), Seek::First, 20, now())
            .unwrap(),
        rows
    );
    drop(ledger);

    for replace in [
        |_: &std::path::Path, foreign: &std::path::Path, model: &std::path::Path| {
            std::fs::copy(foreign, model).unwrap();
        },
        |_: &std::path::Path, _: &std::path::Path, model: &std::path::Path| {
            std::fs::write(model, b"not a database, not at all, not even close").unwrap();
        },
    ] {
        let model = sidecar(&path);
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", model.display()));
        }
        replace(&path, &foreign, &model);
        let (look, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
        assert!(look.model.borrow().is_none(), "never trusted");
        drop(look);
        let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
        assert!(ledger.model.borrow().is_some());
        assert_eq!(
            ledger
                .page(&Query::default(), Seek::First, 20, now())
                .unwrap(),
            rows
        );
        assert_eq!(ledger.state_counts(now()).unwrap().total, 10);
    }
    drop(other_dir);
}

#[test]
fn a_service_write_never_waits_for_the_read_model() {
    let (_dir, ledger, service) = adopted(10);
    service.busy_timeout(Duration::ZERO).unwrap();
    ledger.model.borrow().as_ref().unwrap().holding_a_batch(|| {
        insert_op(&service, 20, "acct-busy", "k-busy", "unknown", None);
        event(&service, 20, "sent");
    });
    assert_eq!(keyed(&ledger, "k-busy").len(), 1);
}

/// A build leaves its read model's WAL empty: the next process to open
/// the file reads all of it back when the builder's process ended without
/// closing it.
#[test]
fn a_build_leaves_the_read_models_wal_empty() {
    let (_dir, ledger, _service) = adopted(200);
    let mut wal = sidecar(ledger.path()).into_os_string();
    wal.push("-wal");
    assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0);
}

/// The build copies through a rollback journal, not the WAL, and leaves
/// the model in WAL, so the console's readers never wait for its keeper.
/// The file's header tells the mode without a connection that would keep
/// the build in WAL: byte 18 is 1 for a rollback journal, 2 for WAL.
#[test]
fn a_build_copies_around_the_wal_and_leaves_the_model_in_it() {
    let (_dir, path, _rows) = closed_after_a_look(10);
    std::fs::remove_file(sidecar(&path)).unwrap();
    let header_mode = || std::fs::read(sidecar(&path)).map(|bytes| bytes[18]);
    let mut while_copying = Vec::new();
    let (ledger, _) = Ledger::open_with_progress(&path, Access::ReadWrite, &mut |p| {
        if p.step.starts_with("copying operations") {
            while_copying.push(header_mode().unwrap());
        }
    })
    .unwrap();
    assert_eq!(while_copying, [1], "the copy's journal");
    assert_eq!(header_mode().unwrap(), 2, "the model after the build");
    let mode: String = Connection::open(sidecar(&path))
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(keyed(&ledger, "k-0003").len(), 1);
}

#[test]
fn a_stopped_build_goes_on_where_it_left_off() {
    let (_dir, path, rows) = closed_after_a_look(10);
    // As a build stopped after copying five operations leaves it, with a
    // mark on a copied row that only a build starting over would erase.
    let model = Connection::open(sidecar(&path)).unwrap();
    model
        .execute_batch(
            "UPDATE settle_marks SET complete = 0, ops = 5, events = 0;
             DELETE FROM settle_ops WHERE id > 5;
             DELETE FROM settle_events;
             DELETE FROM settle_state_counts;
             UPDATE settle_ops SET last_event = 'copied before the stop' WHERE id = 1;",
        )
        .unwrap();
    let (look, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
    assert!(
        look.model.borrow().is_none(),
        "a stopped build is not trusted"
    );
    drop(look);

    let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    assert!(ledger.model.borrow().is_some());
    let (kept, copied, complete): (String, i64, i64) = model
        .query_row(
            "SELECT (SELECT last_event FROM settle_ops WHERE id = 1),
                    (SELECT count(*) FROM settle_ops),
                    (SELECT complete FROM settle_marks)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (kept.as_str(), copied, complete),
        ("copied before the stop", 10, 1)
    );
    assert_eq!(ledger.state_counts(now()).unwrap().total, 10);
    // Rows read as the ledger has them (the mark is only the model's).
    let shown = ledger
        .page(&Query::default(), Seek::First, 20, now())
        .unwrap();
    assert_eq!(
        shown.iter().map(|r| r.id).collect::<Vec<_>>(),
        rows.iter().map(|r| r.id).collect::<Vec<_>>()
    );
}

/// A build that did not sync and stopped in another boot of the machine
/// (a power cut) may have lost pages: it starts over rather than going on.
#[test]
fn a_stopped_build_from_another_boot_starts_over() {
    let (_dir, path, _rows) = closed_after_a_look(10);
    let model = Connection::open(sidecar(&path)).unwrap();
    model
        .execute_batch(
            "UPDATE settle_marks SET complete = 0, ops = 5, events = 0, boot = 'another boot';
             DELETE FROM settle_ops WHERE id > 5;
             UPDATE settle_ops SET last_event = 'copied before the power cut' WHERE id = 1;",
        )
        .unwrap();
    drop(model);
    let (look, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
    assert!(look.model.borrow().is_none(), "a torn build is not trusted");
    drop(look);

    let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
    assert!(ledger.model.borrow().is_some());
    let model = Connection::open(sidecar(&path)).unwrap();
    let (kept, copied, complete, boot): (Option<String>, i64, i64, String) = model
        .query_row(
            "SELECT (SELECT last_event FROM settle_ops WHERE id = 1),
                    (SELECT count(*) FROM settle_ops),
                    (SELECT complete FROM settle_marks), (SELECT boot FROM settle_marks)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_ne!(kept.as_deref(), Some("copied before the power cut"));
    assert_eq!((copied, complete), (10, 1));
    assert_ne!(boot, "another boot");
}

#[test]
fn a_second_process_waits_for_the_build_under_way_instead_of_starting_over() {
    let (_dir, ledger, _service) = adopted(10);
    let path = ledger.path().to_path_buf();
    drop(ledger);
    std::fs::remove_file(sidecar(&path)).unwrap();
    // Another settle holds the build lock.
    let lock = std::fs::File::create(crate::store::sqlite::model::lock_path(&path)).unwrap();
    lock.lock().unwrap();
    let opening = {
        let path = path.clone();
        std::thread::spawn(move || {
            Ledger::open(&path, Access::ReadWrite).map(|(l, _)| l.model.borrow().is_some())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !opening.is_finished(),
        "a second builder must wait for the lock"
    );
    drop(lock);
    assert!(
        opening.join().unwrap().unwrap(),
        "built once the lock is free"
    );
}

/// A big backlog: a read in steps reads what the model holds after a
/// bounded step and says how far it got; steps bring it current, the
/// count of what was read only growing, and then the rows are all there.
#[test]
fn a_backlog_is_caught_up_in_steps_that_say_how_far_they_got() {
    let (_dir, ledger, service) = adopted(10);
    let path = ledger.path().to_path_buf();
    drop(ledger);
    service
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 11 UNION ALL SELECT i + 1 FROM n WHERE i < 40010)
             INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                 max_attempts, created_at, updated_at)
                 SELECT i, 'acct', 'charge', 'k-' || i, 'fp', 'unknown', 3, 't', 't' FROM n;
             INSERT INTO attempts (op_id, attempt, started_at, outcome, error)
                 SELECT id, 1, 't', 'error', 'backlog ' || id FROM operations WHERE id > 10;",
        )
        .unwrap();
    let (look, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
    look.catch_up_in_steps(Waiter::Operator);
    let first = look.page(&Query::default(), Seek::First, 5, now()).unwrap();
    assert!(!first.is_empty());
    let mut last = look.catching_up().expect("a backlog of 80,000 rows");
    assert!(last.done < last.total, "{last:?}");
    let mut steps = 0;
    while let Some(now) = look.catch_up().unwrap() {
        assert!(now.done >= last.done && now.total >= last.total, "{now:?}");
        last = now;
        steps += 1;
    }
    assert!(steps > 0);
    assert_eq!(look.catching_up(), None);
    assert_eq!(keyed(&look, "k-40010").len(), 1);
    assert_eq!(
        look.count(&Query::parse("err:\"backlog 39999\"").unwrap(), now())
            .unwrap(),
        1
    );
}
