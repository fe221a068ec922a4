//! settle on a database Procrastinate itself made and ran: its own
//! `schema --apply`, its own `defer` of tasks that time out and lose their
//! connection (`tests/fixtures/jobqueue/procrastinate_tasks.py`), its own
//! worker, one of which is killed mid-task. The queue settle lists is then
//! exactly what the engine left to settle, each decision is carried out by
//! the engine's functions and seen by its worker, and nothing else in the
//! engine's tables moves. Needs the Python environment `scripts/test`
//! makes (skipped without it, failed with SETTLE_REQUIRE_PG=1).

use crate::kit::jobqueue;
use crate::kit::pg;
use crate::kit::pty;
use crate::kit::py;

use std::path::Path;
use std::time::Duration;

use crate::kit::*;
use jobqueue::*;
use py::{Py, wait_until};

const APP: &str = "--app=procrastinate_tasks.app";
const LIMIT: Duration = Duration::from_secs(20);

fn procrastinate(hint: &str) -> Option<(std::path::PathBuf, Py)> {
    let db = pg::fresh_database(hint)?;
    let py = Py::new(&db, "procrastinate, procrastinate_tasks")?;
    Some((db, py))
}

/// Defers jobs through the app's own `defer` (see the tasks module for
/// what each spec means); returns their ids.
fn defer(py: &Py, specs: &[&str]) -> Vec<i64> {
    let out = py.run("procrastinate_tasks", specs);
    stdout(&out).lines().map(|l| l.parse().unwrap()).collect()
}

fn ids_where(db: &Path, condition: &str) -> Vec<i64> {
    pg::connect(db)
        .query(
            &format!("SELECT id FROM procrastinate_jobs WHERE {condition} ORDER BY id"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn status(db: &Path, id: i64) -> String {
    pg::connect(db)
        .query_one(
            "SELECT status::text FROM procrastinate_jobs WHERE id = $1",
            &[&id],
        )
        .unwrap()
        .get(0)
}

/// The console on `db`, its header naming the engine, with the detail of
/// the one job `filter` finds open.
fn console_on(db: &Path, config: &Path, filter: &str) -> pty::Screen {
    let mut screen = pty::Screen::console(db, config, &[], (120, 40));
    let header = screen.wait_for("Queue", LIMIT);
    assert!(header.contains("(Procrastinate)"), "{header}");
    screen.send("/");
    for c in filter.chars() {
        screen.send(&c.to_string());
    }
    screen.wait_for("Queue 1 operation ", LIMIT);
    // Enter keeps the filter, the next opens the job's detail.
    screen.send("\r");
    screen.send("\r");
    screen
}

fn started_events(db: &Path, id: i64) -> i64 {
    pg::connect(db)
        .query_one(
            "SELECT count(*) FROM procrastinate_events WHERE job_id = $1 AND type = 'started'",
            &[&id],
        )
        .unwrap()
        .get(0)
}

/// Runs the engine until it leaves jobs failed, succeeded and one stalled:
/// returns (the charge jobs' ids, the stalled job's id, the worker that
/// keeps running).
fn run_the_engine(db: &Path, py: &Py) -> (Vec<i64>, i64, py::Running) {
    py.run("procrastinate", &[APP, "schema", "--apply"]);
    // order:fails[:queueing lock]; three runs in all, so 9 fails for good.
    let jobs = defer(
        py,
        &["1:9:charge-1", "2:0", "3:1", "4:3:charge-4", "5:2", "6:9"],
    );
    assert_eq!(jobs.len(), 6);
    py.run("procrastinate", &[APP, "worker", "--one-shot"]);
    let failed: Vec<i64> = [0, 3, 5].iter().map(|&i| jobs[i]).collect();
    assert_eq!(ids_where(db, "status = 'failed'"), failed);
    assert_eq!(
        ids_where(db, "status = 'succeeded'"),
        [jobs[1], jobs[2], jobs[4]]
    );

    // A worker killed while its task runs: the job stays `doing`.
    let hang = defer(py, &["hang:7"])[0];
    let mut killed = py.spawn("procrastinate", &[APP, "worker"]);
    wait_until("the hanging job to start", LIMIT, || {
        status(db, hang) == "doing"
    });
    killed.kill();
    // Its heartbeat goes stale after a second (the tasks module's setting);
    // the next worker to start prunes it, as Procrastinate's workers do.
    std::thread::sleep(Duration::from_millis(1200));
    let worker = py.spawn("procrastinate", &[APP, "worker"]);
    wait_until("the killed worker to be pruned", LIMIT, || {
        ids_where(db, "status = 'doing' AND worker_id IS NULL") == [hang]
    });
    (jobs, hang, worker)
}

#[test]
fn settle_reads_and_decides_what_procrastinate_s_own_worker_left() {
    let Some((db, py)) = procrastinate("procrastinate real") else {
        return;
    };
    let (jobs, hang, mut worker) = run_the_engine(&db, &py);

    // The queue: exactly the failed jobs and the stalled one, as the
    // engine's own tables say.
    let listed = queue(&db);
    let engine = ids_where(
        &db,
        "status = 'failed' OR (status = 'doing' AND worker_id IS NULL)",
    );
    assert_eq!(listed, engine);
    assert_eq!(listed, [jobs[0], jobs[3], jobs[5], hang]);

    // Every failed job's attempts are its `started` events, each ended by
    // the event the engine wrote.
    for id in [jobs[0], jobs[3], jobs[5]] {
        let shown = show(&db, &id.to_string());
        let attempts = attempt_lines(&shown);
        assert_eq!(attempts.len() as i64, started_events(&db, id), "{shown}");
        assert!(attempts[2].contains("failed event"), "{shown}");
    }
    // By its key, the queueing lock it was deferred with.
    let shown = show(&db, "payments/charge/charge-1");
    let attempts = attempt_lines(&shown);
    assert_eq!(attempts.len(), 3, "{shown}");
    assert!(attempts[0].contains("deferred_for_retry"), "{shown}");
    assert!(
        attempts[2].contains("ended by Procrastinate's failed event"),
        "{shown}"
    );
    let stalled = show(&db, &hang.to_string());
    assert!(stalled.contains("reserved (stale"), "{stalled}");
    assert!(
        attempt_lines(&stalled)[0].contains("in_flight"),
        "{stalled}"
    );

    let mut client = pg::connect(&db);
    let before = snapshot(&mut client, "procrastinate_jobs");

    // Applied: succeeded through the engine's functions, audited.
    decide(
        &db,
        "payments/charge/charge-1",
        &[
            "--applied",
            "--result-id",
            "ch_1",
            "--evidence",
            "seen at the bank",
        ],
    );
    assert_eq!(status(&db, jobs[0]), "succeeded");
    let decided: i64 = pg::connect(&db)
        .query_one(
            "SELECT count(*) FROM settle.decisions WHERE op_id = $1 AND decision = 'applied'",
            &[&jobs[0]],
        )
        .unwrap()
        .get(0);
    assert_eq!(decided, 1);

    // Retry with the same key: the operator declared the task idempotent;
    // the engine's own worker runs the job again, and settle shows the run,
    // the console too in the detail it has open.
    let config = tempfile::tempdir().unwrap();
    let mut console = console_on(&db, config.path(), "key:charge-4");
    console.wait_for("ended by Procrastinate's failed event", LIMIT);
    pg::connect(&db)
        .execute(
            "INSERT INTO settle.op_types (op_type, idempotent) VALUES ('charge', true)",
            &[],
        )
        .unwrap();
    let retried = jobs[3].to_string();
    decide(
        &db,
        &retried,
        &["--retry-same-key", "--evidence", "the provider dedupes"],
    );
    wait_until("the engine's worker to run the retried job", LIMIT, || {
        status(&db, jobs[3]) == "succeeded"
    });
    let seen = console.wait_for(
        r#"attempt 4 recorded event "started"; recorded event "succeeded""#,
        LIMIT,
    );
    assert!(seen.contains("state       completed"), "{seen}");
    console.send("q");
    console.send("q");
    assert!(console.wait_exit(LIMIT));
    let shown = show(&db, &retried);
    let attempts = attempt_lines(&shown);
    assert_eq!(attempts.len(), 4, "{shown}");
    assert!(
        attempts[3].starts_with("#4") && attempts[3].contains("success"),
        "{shown}"
    );

    // Not applied: the job leaves the queue as "will not run".
    decide(
        &db,
        &jobs[5].to_string(),
        &["--not-applied", "--evidence", "never sent"],
    );
    assert_eq!(status(&db, jobs[5]), "cancelled");
    assert_eq!(queue(&db), [hang]);

    audit_holds(&db, 3);

    // No job but the decided ones changed.
    let after = snapshot(&mut client, "procrastinate_jobs");
    only_decided_changed(before, after, &[jobs[0], jobs[3], jobs[5]]);

    // The engine's worker kept working throughout, and still takes new jobs.
    assert!(worker.still_running(), "the engine's worker stopped");
    let fresh = defer(&py, &["8:0"])[0];
    wait_until("the engine's worker to run a new job", LIMIT, || {
        status(&db, fresh) == "succeeded"
    });
}

#[test]
fn procrastinate_s_migrations_still_run_after_settle_adopted_the_database() {
    let Some((db, py)) = procrastinate("procrastinate migrations") else {
        return;
    };
    let out = py.run("procrastinate", &[APP, "schema", "--migrations-path"]);
    let dir = stdout(&out).trim().to_string();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    // The schema as Procrastinate 3.1 left it (the workers' heartbeats are
    // there), then settle adopts it, then the engine's later migrations.
    let later = files
        .iter()
        .position(|p| p.file_name().unwrap().to_string_lossy().as_ref() >= "03.02")
        .unwrap();
    let mut client = pg::connect(&db);
    let migrate = |client: &mut postgres::Client, files: &[std::path::PathBuf]| {
        for file in files {
            let sql = std::fs::read_to_string(file).unwrap();
            if let Err(e) = client.batch_execute(&sql) {
                panic!("{}: {e}", file.display());
            }
        }
    };
    migrate(&mut client, &files[..later]);
    let adopted = settle(&["adopt", db.to_str().unwrap()]);
    assert_eq!(code(&adopted), 0, "{}", stderr(&adopted));
    assert!(
        stdout(&adopted).contains("made the settle schema"),
        "{}",
        stdout(&adopted)
    );
    assert!(files.len() > later, "no migration after 3.1 to run");
    migrate(&mut client, &files[later..]);

    // The engine works on the migrated schema, and settle still reads it.
    defer(&py, &["1:9"]);
    py.run("procrastinate", &[APP, "worker", "--one-shot"]);
    assert_eq!(ids_where(&db, "status = 'failed'").len(), 1);
    assert_eq!(queue(&db).len(), 1);
}
