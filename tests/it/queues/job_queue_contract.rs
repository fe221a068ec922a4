//! A task's contract declared in the receivers file, on a job queue's own
//! database: the engine says nothing of idempotency, so without the file a
//! same-key retry of a failed Procrastinate job is refused, and with
//! `idempotent = true` for its task it goes back to the engine's queue
//! through the engine's own retry. The fixtures are `job_queues.rs`'s.

use crate::kit::jobqueue::{PROCRASTINATE, engine};
use crate::kit::pg;

use crate::kit::*;

#[test]
fn a_procrastinate_task_declared_idempotent_in_the_file_may_be_retried() {
    let Some(db) = engine("contract file procrastinate", PROCRASTINATE) else {
        return;
    };
    let mut client = pg::connect(&db);
    let address = db.to_str().unwrap();
    let job = "payments/charge/charge-1";
    let status = |client: &mut postgres::Client| -> String {
        let sql = "SELECT status::text FROM procrastinate_jobs WHERE id = 1";
        client.query_one(sql, &[]).unwrap().get(0)
    };
    let retry = [
        "decide",
        address,
        job,
        "--retry-same-key",
        "--operator",
        "ann",
    ];

    let out = settle(&retry);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("no op_types row"), "{}", stderr(&out));
    assert_eq!(status(&mut client), "failed", "a refusal changed the job");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receivers.toml");
    std::fs::write(&file, "[receivers.charge]\nidempotent = true\n").unwrap();
    let file = file.to_str().unwrap();
    let shown = settle(&["show", address, job, "--receivers", file]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains(&format!("contract     declared by {file} (never drilled)")),
        "{}",
        stdout(&shown)
    );

    let mut allowed = retry.to_vec();
    allowed.extend(["--receivers", file]);
    let out = settle(&allowed);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        status(&mut client),
        "todo",
        "the engine's retry queues it again"
    );
    let decided: String = client
        .query_one("SELECT decision FROM settle.decisions WHERE op_id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(decided, "retry_same_key");
}
