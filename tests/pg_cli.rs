//! The CLI on a PostgreSQL ledger, through the real binary and a throwaway
//! cluster (`common/pg.rs`): `init` creates and refuses a second time,
//! `adopt` adopts a service's plain-SQL tables once, and no output ever
//! carries the password the address held.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::*;

/// The address with a password in it (the throwaway cluster trusts every
/// local connection, so any password is accepted).
fn with_password(db: &std::path::Path) -> String {
    format!("{} password=s3cret", db.display())
}

#[test]
fn init_creates_a_postgres_ledger_once_and_never_shows_the_password() {
    let Some(db) = pg::fresh_database("cli init") else {
        return;
    };
    let address = with_password(&db);
    let out = settle(&["init", &address]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("created postgres@"),
        "{}",
        stdout(&out)
    );
    let again = settle(&["init", &address]);
    assert_ne!(code(&again), 0);
    assert!(
        stderr(&again).contains("already holds a ledger"),
        "{}",
        stderr(&again)
    );
    for o in [&out, &again] {
        assert!(!stdout(o).contains("s3cret") && !stderr(o).contains("s3cret"));
    }
}

#[test]
fn adopt_adopts_a_service_database_once() {
    let Some(db) = pg::fresh_database("cli adopt") else {
        return;
    };
    let mut service = pg::connect(&db);
    service
        .batch_execute(
            "CREATE TABLE operations (id bigserial PRIMARY KEY, account text NOT NULL,
               op_type text NOT NULL, idem_key text NOT NULL, fingerprint text NOT NULL,
               params text, state text NOT NULL, result_id text, max_attempts bigint NOT NULL,
               deadline_at timestamptz, lease_expires_at timestamptz, key_expires_at timestamptz,
               created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
               version bigint NOT NULL DEFAULT 0, UNIQUE (account, op_type, idem_key));
             CREATE TABLE attempts (op_id bigint NOT NULL, attempt bigint NOT NULL,
               started_at timestamptz NOT NULL, ended_at timestamptz, outcome text NOT NULL,
               error text, response text, PRIMARY KEY (op_id, attempt));
             CREATE TABLE events (id bigserial PRIMARY KEY, op_id bigint NOT NULL, attempt bigint,
               at timestamptz NOT NULL, event text NOT NULL, detail text);
             INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts,
               created_at, updated_at) VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, now(), now());",
        )
        .unwrap();
    let address = with_password(&db);
    let out = settle(&["adopt", &address]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("adopted postgres@")
            && stdout(&out).contains("no service rows changed"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("settle: adopting: building index settle_operations_queue"));
    let again = settle(&["adopt", &address]);
    assert!(
        stdout(&again).contains("is already adopted (schema 1); nothing to do"),
        "{}",
        stdout(&again)
    );
    let decisions: i64 = service
        .query_one("SELECT count(*) FROM decisions", &[])
        .unwrap()
        .get(0);
    assert_eq!(decisions, 0);
    for o in [&out, &again] {
        assert!(!stdout(o).contains("s3cret") && !stderr(o).contains("s3cret"));
    }
}
