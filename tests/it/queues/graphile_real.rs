//! settle on Graphile Worker's own tables, made by its own migrations,
//! with jobs added by its `addJob` and run by its own worker
//! (`tests/fixtures/jobqueue/graphile/graphile.js`): a task that always
//! fails leaves failed jobs, a worker killed mid-task leaves a locked one.
//! The queue is those, the locked one once it has been locked longer than
//! `--locked-after`; each decision is Graphile's admin function, and the
//! retried job is run to the end (deleted) by Graphile's worker. Needs the
//! Node package `scripts/test` installs (skipped without it, failed with
//! SETTLE_REQUIRE_PG=1).

use std::path::Path;
use std::time::Duration;

use crate::kit::jobqueue::*;
use crate::kit::node::Graphile;
use crate::kit::*;

const JOBS: &str = "graphile_worker._private_jobs";

/// The jobs Graphile leaves to an operator, asked of its table: no
/// attempt left, or locked longer than `bound`.
fn stuck(client: &mut postgres::Client, bound: &str) -> Vec<i64> {
    let sql = format!(
        "SELECT id FROM {JOBS} WHERE attempts >= max_attempts
            OR locked_at < now() - interval '{bound}' ORDER BY id"
    );
    client
        .query(&sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// `settle` on the database with `args`, and `--locked-after 1s`.
fn settle_1s(db: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![args[0], db.to_str().unwrap()];
    all.extend_from_slice(&args[1..]);
    all.extend_from_slice(&["--locked-after", "1s"]);
    settle(&all)
}

fn queue_1s(db: &Path) -> Vec<i64> {
    let out = settle_1s(db, &["list", "--queue", "--all", "--format", "jsonl"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut ids = jsonl_ids(&out);
    ids.sort();
    ids
}

/// Every named queue with its lock, by id (Graphile's are `int`).
fn queues(client: &mut postgres::Client) -> std::collections::BTreeMap<i64, String> {
    let sql = "SELECT id::bigint, xmin::text || ' ' || row_to_json(q)::text
        FROM graphile_worker._private_job_queues q";
    let rows = client.query(sql, &[]).unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

fn row(client: &mut postgres::Client, id: i64, columns: &str) -> Option<String> {
    let sql = format!("SELECT concat_ws(' ', {columns})::text FROM {JOBS} WHERE id = $1");
    client.query_opt(&sql, &[&id]).unwrap().map(|r| r.get(0))
}

/// Graphile's migrations, its jobs added and run: returns the ids of the
/// jobs and the locked one's.
fn run_the_engine(graphile: &Graphile) -> (Vec<i64>, i64) {
    graphile.run(&["migrate"], false);
    let added = graphile.run(
        &[
            "add",
            "payments:charge:ch-1:1",
            "payments:charge:ch-2:1",
            "-:charge:-:1",
            "mail:charge:-:3",
            "-:report:-:5",
        ],
        false,
    );
    let jobs: Vec<i64> = stdout(&added).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(jobs.len(), 5);
    // The charge task fails: three jobs have no attempt left, one waits for
    // its retry; no worker knows `report`, which stays waiting.
    graphile.run(&["once"], true);
    graphile.run(&["add", "payments:hang:-:5"], false);
    let (locked, mut worker) = graphile.worker_holding_a_job();
    worker.kill();
    (jobs, locked)
}

#[test]
fn settle_reads_and_decides_graphile_worker_jobs_its_own_worker_ran() {
    let Some(db) = pg::fresh_database("graphile real") else {
        return;
    };
    let Some(graphile) = Graphile::new(&db) else {
        return;
    };
    let (jobs, locked) = run_the_engine(&graphile);
    let address = db.to_str().unwrap();
    let mut client = pg::connect(&db);
    // settle compares whole seconds: past the bound for certain.
    std::thread::sleep(Duration::from_millis(2200));

    // The queue: the failed jobs, and the dead worker's once locked longer
    // than the bound; at Graphile's own four hours it is still the worker's.
    assert_eq!(
        stuck(&mut client, "1 second"),
        [jobs[0], jobs[1], jobs[2], locked]
    );
    assert_eq!(queue_1s(&db), stuck(&mut client, "1 second"));
    assert_eq!(queue(&db), stuck(&mut client, "4 hours"));
    assert_eq!(queue(&db), jobs[..3]);

    let failed = show(&db, &jobs[0].to_string());
    for seen in [
        "exhausted",
        "payments",
        "charge",
        "ch-1",
        "provider timed out after 30s",
    ] {
        assert!(failed.contains(seen), "{seen} in\n{failed}");
    }
    let held = settle_1s(&db, &["show", &locked.to_string()]);
    assert!(
        stdout(&held).contains("reserved (stale"),
        "{}",
        stdout(&held)
    );

    let before = snapshot(&mut client, JOBS);
    let queues_before = queues(&mut client);

    // A version the operator did not see is refused, nothing written.
    let stale = settle(&[
        "decide",
        address,
        &jobs[0].to_string(),
        "--applied",
        "--expect-version",
        "1",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&stale), 4, "{}", stderr(&stale));
    assert_eq!(snapshot(&mut client, JOBS), before);
    // The locked job is its worker's under Graphile's own bound.
    let live = settle(&[
        "decide",
        address,
        &locked.to_string(),
        "--not-applied",
        "--evidence",
        "x",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&live), 3, "{}", stderr(&live));
    assert_eq!(snapshot(&mut client, JOBS), before);

    // Applied: complete_jobs deletes it, as Graphile's worker does.
    decide(
        &db,
        &jobs[0].to_string(),
        &["--applied", "--result-id", "ch_1"],
    );
    assert_eq!(row(&mut client, jobs[0], "id"), None);

    // Not applied on the dead worker's job: its lock and its queue's are
    // taken off, then permanently_fail_jobs with settle's words.
    let out = settle_1s(
        &db,
        &[
            "decide",
            &locked.to_string(),
            "--not-applied",
            "--evidence",
            "never sent",
            "--operator",
            "ann",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        row(
            &mut client,
            locked,
            "attempts || '/' || max_attempts, locked_at IS NULL, last_error"
        )
        .unwrap(),
        "5/5 t settle: not applied (an operator decided so; see the settle audit trail)"
    );
    let queue_lock: bool = client
        .query_one(
            "SELECT bool_and(locked_at IS NULL AND locked_by IS NULL)
             FROM graphile_worker._private_job_queues",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(queue_lock);

    // Retry with the same key, the task declared idempotent:
    // reschedule_jobs makes it due now with one more attempt allowed.
    client
        .execute(
            "INSERT INTO settle.op_types (op_type, idempotent) VALUES ('charge', true)",
            &[],
        )
        .unwrap();
    decide(
        &db,
        &jobs[1].to_string(),
        &["--retry-same-key", "--evidence", "the provider dedupes"],
    );
    assert_eq!(
        row(
            &mut client,
            jobs[1],
            "attempts || '/' || max_attempts, run_at <= now(), key, is_available"
        )
        .unwrap(),
        "1/2 t ch-2 t"
    );

    // No job but the decided ones changed, nor any queue but the one the
    // dead worker held.
    let after = snapshot(&mut client, JOBS);
    only_decided_changed(before, after, &[jobs[0], jobs[1], locked]);
    let payments: i64 = client
        .query_one(
            "SELECT id::bigint FROM graphile_worker._private_job_queues WHERE queue_name = 'payments'",
            &[],
        )
        .unwrap()
        .get(0);
    only_decided_changed(queues_before, queues(&mut client), &[payments]);
    assert_eq!(queue_1s(&db), [jobs[2]]);
    audit_holds(&db, 3);
    assert_eq!(
        pg::connect(&db)
            .query_one(
                "SELECT string_agg(decision, ',' ORDER BY id) FROM settle.decisions",
                &[]
            )
            .unwrap()
            .get::<_, String>(0),
        "applied,not_applied,retry_same_key"
    );

    // Graphile's own worker runs the retried job, now succeeding: deleted.
    graphile.run(&["once"], false);
    assert_eq!(row(&mut client, jobs[1], "id"), None);
    assert!(row(&mut client, jobs[2], "id").is_some());
    assert!(row(&mut client, jobs[4], "id").is_some());
}

/// `--remove-not-applied`: not applied is Graphile's `remove_job`, by the
/// job's key, a dead worker's lock taken off first: the job is gone and
/// the decision is settle's alone. A job added without a key has none to
/// remove by: refused, nothing written.
#[test]
fn not_applied_removes_a_keyed_job_where_the_operator_chooses_so() {
    let Some(db) = pg::fresh_database("graphile remove") else {
        return;
    };
    let Some(graphile) = Graphile::new(&db) else {
        return;
    };
    graphile.run(&["migrate"], false);
    let added = graphile.run(
        &[
            "add",
            "payments:charge:rm-1:1",
            "-:charge:-:1",
            "mail:charge:rm-3:1",
        ],
        false,
    );
    let jobs: Vec<i64> = stdout(&added).lines().map(|l| l.parse().unwrap()).collect();
    graphile.run(&["once"], true);
    let address = db.to_str().unwrap();
    let mut client = pg::connect(&db);
    assert_eq!(queue(&db), jobs);
    let before = snapshot(&mut client, JOBS);

    let remove = |op: i64| {
        settle(&[
            "decide",
            address,
            &op.to_string(),
            "--not-applied",
            "--evidence",
            "the provider has no such charge",
            "--operator",
            "ann",
            "--remove-not-applied",
        ])
    };
    let out = remove(jobs[0]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(row(&mut client, jobs[0], "id"), None);

    // No key: remove_job cannot name it; the job is as it was.
    let keyless = remove(jobs[1]);
    assert_eq!(code(&keyless), 3, "{}", stderr(&keyless));
    let said = stderr(&keyless);
    assert!(said.contains("job key"), "{said}");
    assert!(said.contains("without --remove-not-applied"), "{said}");
    assert!(said.contains("nothing was written"), "{said}");

    let mut after = snapshot(&mut client, JOBS);
    let mut expected = before.clone();
    expected.remove(&jobs[0]);
    after.retain(|id, _| *id != jobs[0]);
    assert_eq!(after, expected, "only the removed job changed");
    assert_eq!(queue(&db), [jobs[1], jobs[2]]);
    audit_holds(&db, 1);
    let recorded: String = client
        .query_one(
            "SELECT decision || ' ' || op_id || ' ' || to_state FROM settle.decisions",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(recorded, format!("not_applied {} not_applied", jobs[0]));
}
