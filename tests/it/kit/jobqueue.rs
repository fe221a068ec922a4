//! What the job queue tests ask settle and compare, on both engines: the
//! queue's ids, a job's detail and attempts, a decision, and that no job
//! but the decided ones changed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::kit::{code, jsonl_ids, pg, settle, stderr, stdout};

/// Procrastinate's schema and one job in each status (`tests/fixtures/jobqueue/`).
pub const PROCRASTINATE: [&str; 2] = [
    include_str!("../../fixtures/jobqueue/procrastinate.sql"),
    include_str!("../../fixtures/jobqueue/procrastinate-jobs.sql"),
];
/// River's schema and one job in each state.
pub const RIVER: [&str; 2] = [
    include_str!("../../fixtures/jobqueue/river.sql"),
    include_str!("../../fixtures/jobqueue/river-jobs.sql"),
];
/// Oban's schema as its migrations define it, and jobs moved as its engine moves them.
pub const OBAN: [&str; 2] = [
    include_str!("../../fixtures/jobqueue/oban.sql"),
    include_str!("../../fixtures/jobqueue/oban-jobs.sql"),
];

/// A throwaway database holding an engine's tables: `scripts` run in
/// order. None where no PostgreSQL is at hand.
pub fn engine(hint: &str, scripts: [&str; 2]) -> Option<std::path::PathBuf> {
    let db = pg::fresh_database(hint)?;
    let mut client = pg::connect(&db);
    for script in scripts {
        client.batch_execute(script).unwrap();
    }
    Some(db)
}

/// The ids `settle list --queue --all` prints, sorted.
pub fn queue(db: &Path) -> Vec<i64> {
    let address = db.to_str().unwrap();
    let out = settle(&["list", address, "--queue", "--all", "--format", "jsonl"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut ids = jsonl_ids(&out);
    ids.sort();
    ids
}

/// What `settle show` prints for `op` (an id or account/type/key).
pub fn show(db: &Path, op: &str) -> String {
    let out = settle(&["show", db.to_str().unwrap(), op]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
}

/// `settle decide` on `op` as the operator ann, with `how`; must succeed.
pub fn decide(db: &Path, op: &str, how: &[&str]) {
    let mut args = vec!["decide", db.to_str().unwrap(), op, "--operator", "ann"];
    args.extend_from_slice(how);
    let out = settle(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The attempt lines of a `settle show` (`#1 error …`), trimmed.
pub fn attempt_lines(shown: &str) -> Vec<String> {
    let attempts = shown.split("\nattempts\n").nth(1).unwrap_or_default();
    let attempts = attempts.split("\n\n").next().unwrap_or_default();
    attempts.lines().map(|l| l.trim().to_string()).collect()
}

/// `audit --verify` holds, over `n` decisions.
pub fn audit_holds(db: &Path, n: usize) {
    let verified = settle(&["audit", db.to_str().unwrap(), "--verify"]);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
    let said = stdout(&verified);
    assert!(
        said.contains(&format!(
            "chain intact: {n} decision{}",
            if n == 1 { "" } else { "s" }
        )),
        "{said}"
    );
}

/// Every row of `table` as the engine holds it (with its `xmin`, which
/// moves on any update), by id.
pub fn snapshot(client: &mut postgres::Client, table: &str) -> BTreeMap<i64, String> {
    let sql = format!("SELECT id, xmin::text || ' ' || row_to_json(j)::text FROM {table} j");
    let rows = client.query(&sql, &[]).unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Only the `decided` jobs differ between the two snapshots, and each did.
pub fn only_decided_changed(
    mut before: BTreeMap<i64, String>,
    mut after: BTreeMap<i64, String>,
    decided: &[i64],
) {
    for id in decided {
        assert_ne!(before.remove(id), after.remove(id), "job {id} was decided");
    }
    assert_eq!(before, after);
}
