//! The audit trail is append-only in the database and tamper-evident: plain
//! SQL from a service cannot edit or delete it, and an edit made with the
//! triggers dropped is caught by `settle audit --verify`, which an auditor
//! can redo from the contract's encoding alone.

use crate::kit::*;

use sha2::{Digest, Sha256};
use std::path::Path;

fn decide(ledger: &Path, args: &[&str]) {
    let mut all = vec!["decide", ledger.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--operator", "tester"]);
    let out = settle(&all);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
}

fn verify(ledger: &Path) -> std::process::Output {
    settle(&["audit", ledger.to_str().unwrap(), "--verify"])
}

/// A demo ledger with a few decisions of every kind that writes a row:
/// applied, not applied, retry, cancel, reopen (ids 2 to 6 after the
/// demo's own decision 1).
fn ledger_with_decisions(dir: &Path) -> std::path::PathBuf {
    let l = demo_ledger(dir);
    decide(&l, &["2", "--applied", "--result-id", "r-2"]);
    decide(
        &l,
        &["12", "--not-applied", "--evidence", "provider: no refund"],
    );
    decide(&l, &["2", "--reopen", "2"]);
    decide(
        &l,
        &["2", "--retry-same-key", "--note", "idempotent receiver"],
    );
    decide(&l, &["2", "--cancel-retry"]);
    l
}

/// The contract's encoding (docs/ledger-v1.md), written again here from the
/// document rather than shared with settle, so the two cannot drift.
fn auditor_chain(ledger: &Path) -> Vec<(i64, String, Option<String>)> {
    let conn = sql(ledger);
    let mut stmt = conn
        .prepare(
            "SELECT id, op_id, decision, from_state, to_state, result_id, evidence, note,
                 operator, decided_at, op_version, undoes, extra_attempt, chain_hash
             FROM decisions ORDER BY id",
        )
        .unwrap();
    let mut prev = "0".repeat(64);
    let mut out = Vec::new();
    let mut rows = stmt.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let mut message = prev.clone().into_bytes();
        for i in 0..13 {
            use rusqlite::types::ValueRef;
            match row.get_ref(i).unwrap() {
                ValueRef::Null => message.extend(b"n;"),
                ValueRef::Integer(n) => message.extend(format!("i{n};").bytes()),
                ValueRef::Text(t) => {
                    message.extend(format!("t{}:", t.len()).bytes());
                    message.extend(t);
                    message.push(b';');
                }
                other => panic!("settle never writes {other:?}"),
            }
        }
        let hash: String = Sha256::digest(&message)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        out.push((row.get(0).unwrap(), hash.clone(), row.get(13).unwrap()));
        prev = hash;
    }
    out
}

#[test]
fn plain_sql_cannot_edit_or_delete_the_trail() {
    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    let before = dump(&l);
    let conn = sql(&l);
    for refused in [
        "UPDATE decisions SET note = 'forged' WHERE id = 2",
        "UPDATE decisions SET decision = 'not_applied'",
        "DELETE FROM decisions WHERE id = 3",
        "DELETE FROM decisions",
        "DELETE FROM retry_requests",
        "UPDATE retry_requests SET requested_by = 'mallory'",
        "UPDATE retry_requests SET op_id = 1 WHERE op_id = 15",
        // cancelled is final; a request never moves back
        "UPDATE retry_requests SET status = 'queued' WHERE status = 'cancelled'",
    ] {
        let err = conn.execute(refused, []).expect_err(refused).to_string();
        assert!(
            err.contains("append-only") || err.contains("only moves forward"),
            "{refused}: {err}"
        );
    }
    assert_eq!(before, dump(&l), "a refused statement changed something");

    // What a worker does is allowed: claim, then done; never back.
    let worker = |q: &str| conn.execute(q, []);
    worker("UPDATE retry_requests SET status = 'claimed' WHERE op_id = 15").unwrap();
    let back = worker("UPDATE retry_requests SET status = 'queued' WHERE op_id = 15")
        .unwrap_err()
        .to_string();
    assert!(back.contains("only moves forward"), "{back}");
    worker("UPDATE retry_requests SET status = 'done' WHERE op_id = 15").unwrap();
    assert_eq!(
        query_text(&l, "SELECT status FROM retry_requests WHERE op_id = 15"),
        "done"
    );
}

#[test]
fn the_chain_holds_through_reopen_and_cancel_and_an_auditor_can_recompute_it() {
    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    let out = verify(&l);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("chain intact: 6 decisions, head "),
        "{}",
        stdout(&out)
    );
    let chain = auditor_chain(&l);
    assert_eq!(chain.len(), 6);
    for (id, recomputed, stored) in &chain {
        assert_eq!(Some(recomputed), stored.as_ref(), "decision {id}");
    }
    let head = &chain.last().unwrap().1;
    assert_eq!(
        stdout(&out).trim(),
        format!("chain intact: 6 decisions, head {head} (decision 6)")
    );
}

#[test]
fn an_edit_made_with_the_triggers_dropped_is_caught_naming_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    // A hostile admin: drop the guard, forge the evidence, leave no trace.
    sql(&l)
        .execute_batch(
            "DROP TRIGGER settle_decisions_no_update;
             UPDATE decisions SET evidence = 'provider: refunded' WHERE id = 3;",
        )
        .unwrap();
    let out = verify(&l);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("audit trail broken at decision 3: its columns were changed"),
        "{err}"
    );
    // Verifying reads only: the guard is still gone.
    assert!(!err.contains("repaired"), "{err}");
    // Adopting puts the guard back, names it, and does not launder the edit.
    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("repaired"), "{said}");
    assert!(said.contains("settle_decisions_no_update"), "{said}");
    assert_eq!(code(&verify(&l)), 1);
    assert!(
        sql(&l)
            .execute("UPDATE decisions SET evidence = 'x' WHERE id = 3", [])
            .is_err()
    );
}

#[test]
fn a_deleted_or_smuggled_decision_breaks_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    let ro = |l: &Path| settle(&["audit", l.to_str().unwrap(), "--verify", "--read-only"]);
    sql(&l)
        .execute_batch(
            "DROP TRIGGER settle_decisions_no_delete; DELETE FROM decisions WHERE id = 4;",
        )
        .unwrap();
    let out = ro(&l);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(
            "broken at decision 5: it does not link to decision 3: decision 4 is missing"
        ),
        "{}",
        stderr(&out)
    );

    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    // Inserting is not refused (settle itself appends), but a row settle
    // did not write has no link.
    sql(&l)
        .execute(
            "INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
             VALUES (1, 'applied', 'unknown', 'completed', 'mallory', '2026-11-30T00:00:00Z', 0)",
            [],
        )
        .unwrap();
    let out = ro(&l);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("decision 7: it has no chain hash"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_schema_2_ledger_is_migrated_in_one_step_and_its_decisions_chained() {
    let dir = tempfile::tempdir().unwrap();
    let l = ledger_with_decisions(dir.path());
    // Make it what settle 2 left: no chain column, no append-only triggers.
    sql(&l)
        .execute_batch(
            "DROP TRIGGER settle_decisions_no_update; DROP TRIGGER settle_decisions_no_delete;
             DROP TRIGGER settle_retry_requests_no_delete; DROP TRIGGER settle_retry_requests_fixed;
             DROP TRIGGER settle_retry_requests_forward;
             ALTER TABLE decisions DROP COLUMN chain_hash;
             PRAGMA user_version = 2;",
        )
        .unwrap();
    let columns = "SELECT id, op_id, decision, from_state, to_state, result_id, evidence, note,
        operator, decided_at, op_version, undoes, extra_attempt FROM decisions ORDER BY id";
    let before = dump_of(&l, columns);
    // Verifying reads only, so it cannot chain them: it says how.
    let out = verify(&l);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("`settle adopt LEDGER`"),
        "{}",
        stderr(&out)
    );
    let out = settle(&["adopt", l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "(schema 2 -> {})",
            settle::store::schema::SCHEMA_VERSION
        )) && stdout(&out).contains("hash chain over the 6 decisions"),
        "{}",
        stdout(&out)
    );
    let out = verify(&l);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("chain intact: 6 decisions"));
    assert_eq!(
        query_i64(&l, "PRAGMA user_version"),
        settle::store::schema::SCHEMA_VERSION
    );
    for (id, recomputed, stored) in auditor_chain(&l) {
        assert_eq!(Some(recomputed), stored, "decision {id}");
    }
    // No decision's columns changed, and the trail is now guarded.
    assert_eq!(before, dump_of(&l, columns), "decisions changed");
    assert!(sql(&l).execute("DELETE FROM decisions", []).is_err());
    // The next decision links on.
    decide(
        &l,
        &["13", "--not-applied", "--evidence", "no account created"],
    );
    assert!(stdout(&verify(&l)).starts_with("chain intact: 7 decisions"));
}

/// Every row `query` returns, as text.
fn dump_of(ledger: &Path, query: &str) -> Vec<String> {
    let conn = sql(ledger);
    let mut stmt = conn.prepare(query).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                r.get::<_, rusqlite::types::Value>(i)
                    .map(|v| format!("{v:?}"))
            })
            .collect::<rusqlite::Result<Vec<_>>>()
            .map(|cells| cells.join("|"))
    })
    .unwrap()
    .collect::<rusqlite::Result<Vec<_>>>()
    .unwrap()
}
