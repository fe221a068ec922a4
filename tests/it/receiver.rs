//! The reference receiver (`settle receiver`) through the real binary: it
//! answers lookups and retries the way the receivers contract says, keeps
//! exactly one effect per key however many retries race, and fits the
//! runner settle's probe and worker use.

use crate::kit::*;
use std::path::Path;
use std::process::{Command, Output};

use settle::domain::OperationId;
use settle::receivers::{self, LookupOutcome, Receivers, RetryOutcome, Subject};

const PARAMS: &str = r#"{"amount":1200,"currency":"EUR"}"#;

/// `settle receiver ARGS` with the operation `key` in `SETTLE_*`.
fn receiver(args: &[&str], key: &str, params: &str) -> Command {
    let mut cmd = bin();
    cmd.arg("receiver")
        .args(args)
        .env("SETTLE_OP_ID", "15")
        .env("SETTLE_ACCOUNT", "acme")
        .env("SETTLE_OP_TYPE", "refund")
        .env("SETTLE_KEY", key)
        .env("SETTLE_FINGERPRINT", "sha256:aa")
        .env("SETTLE_PARAMS", params)
        .env("SETTLE_ATTEMPT", "2");
    cmd
}

fn run(args: &[&str], key: &str, params: &str) -> Output {
    receiver(args, key, params).output().unwrap()
}

fn record(db: &str, key: &str, result_id: &str) {
    let out = settle(&[
        "receiver",
        "record",
        "--db",
        db,
        "--account",
        "acme",
        "--op-type",
        "refund",
        "--key",
        key,
        "--result-id",
        result_id,
        "--fingerprint",
        "sha256:aa",
        "--params",
        PARAMS,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn effects(db: &Path, key: &str) -> i64 {
    query_i64(
        db,
        &format!("SELECT count(*) FROM effects WHERE idem_key = '{key}'"),
    )
}

#[test]
fn a_seeded_effect_is_found_and_an_unknown_key_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    record(db_s, "rfd-1", "re-77");
    let found = run(&["lookup", "--db", db_s], "rfd-1", PARAMS);
    assert_eq!((code(&found), stdout(&found)), (0, "re-77\n".to_string()));
    let missing = run(&["lookup", "--db", db_s], "rfd-2", PARAMS);
    assert_eq!(code(&missing), 3);
    assert_eq!(stdout(&missing), "");
    assert!(stderr(&missing).contains("no record of key acme/refund/rfd-2"));
}

#[test]
fn a_lookup_on_a_mistyped_database_cannot_tell_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("recieverr.db");
    let out = run(&["lookup", "--db", typo.to_str().unwrap()], "k", PARAMS);
    assert!(![0, 3].contains(&code(&out)), "must read as unknown");
    assert!(!typo.exists());
}

#[test]
fn a_retry_makes_one_effect_and_a_second_retry_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    let first = run(&["retry", "--db", db_s], "rfd-9", PARAMS);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let id = stdout(&first);
    assert!(id.starts_with("rcv-"), "{id}");
    // Same params, other key order: the same request, replayed.
    let again = run(
        &["retry", "--db", db_s],
        "rfd-9",
        r#"{"currency":"EUR", "amount":1200}"#,
    );
    assert_eq!((code(&again), stdout(&again)), (0, id));
    assert_eq!(effects(&db, "rfd-9"), 1);
    assert_eq!(
        query_i64(&db, "SELECT attempt FROM effects WHERE idem_key = 'rfd-9'"),
        2,
        "the effect records SETTLE_ATTEMPT"
    );
}

#[test]
fn a_retry_with_other_params_under_a_known_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    record(db_s, "rfd-1", "re-77");
    let out = run(&["retry", "--db", db_s], "rfd-1", r#"{"amount":9999}"#);
    assert_eq!(code(&out), 3);
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    assert_eq!(effects(&db, "rfd-1"), 1, "nothing new was done");
    // A lookup with those params cannot tell: not "found", not "no record".
    let look = run(&["lookup", "--db", db_s], "rfd-1", r#"{"amount":9999}"#);
    assert_eq!(code(&look), 4);
}

#[test]
fn a_forgotten_key_cannot_be_told_by_a_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    let out = settle(&[
        "receiver",
        "record",
        "--db",
        db_s,
        "--account",
        "acme",
        "--op-type",
        "refund",
        "--key",
        "old",
        "--result-id",
        "re-1",
        "--retention-s",
        "0",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let look = run(&["lookup", "--db", db_s], "old", PARAMS);
    assert_eq!(code(&look), 4, "{}", stderr(&look));
    assert!(stderr(&look).contains("forgotten"), "{}", stderr(&look));
}

#[test]
fn without_the_operation_in_the_environment_it_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let out = bin()
        .args(["receiver", "retry", "--db", db.to_str().unwrap()])
        .env_remove("SETTLE_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("SETTLE_"), "{}", stderr(&out));
}

#[test]
fn racing_retries_of_one_key_make_exactly_one_effect() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    // Created first, so the race is on the key, not on making the file.
    record(db_s, "other", "re-0");
    let children: Vec<_> = (0..8)
        .map(|_| {
            receiver(&["retry", "--db", db_s], "rfd-race", PARAMS)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for out in &outs {
        assert_eq!(code(out), 0, "{}", stderr(out));
        assert_eq!(
            stdout(out),
            stdout(&outs[0]),
            "every racer got one result id"
        );
    }
    assert_eq!(effects(&db, "rfd-race"), 1);
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM calls WHERE idem_key = 'rfd-race' AND answer = 'replay'"
        ),
        7
    );
}

/// The reference receiver behind a receivers file, run by the same runner
/// the probe and the worker use.
#[test]
fn the_runner_and_the_reference_receiver_speak_the_same_contract() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("receiver.db");
    let db_s = db.to_str().unwrap();
    record(db_s, "rfd-seen", "re-42");
    let exe = env!("CARGO_BIN_EXE_settle");
    let file = dir.path().join("receivers.toml");
    std::fs::write(
        &file,
        format!(
            "[receivers.\"*\"]\nlookup = [{exe:?}, \"receiver\", \"lookup\", \"--db\", {db_s:?}]\n\
             retry = [{exe:?}, \"receiver\", \"retry\", \"--db\", {db_s:?}]\ntimeout_s = 30\n"
        ),
    )
    .unwrap();
    let receivers = Receivers::load(&file).unwrap();
    let subject = |key: &str| Subject {
        op_id: OperationId(15),
        account: "acme".into(),
        op_type: "refund".into(),
        key: key.into(),
        fingerprint: "sha256:aa".into(),
        params: Some(PARAMS.into()),
    };
    assert_eq!(
        receivers::lookup(&receivers, &subject("rfd-seen")).outcome,
        LookupOutcome::Found {
            result_id: "re-42".into()
        }
    );
    assert_eq!(
        receivers::lookup(&receivers, &subject("rfd-new")).outcome,
        LookupOutcome::NotFound
    );
    let done = receivers::retry(&receivers, &subject("rfd-seen"), 2);
    assert_eq!(
        done.outcome,
        RetryOutcome::Completed {
            result_id: "re-42".into()
        },
        "a replay counts as completed"
    );
    assert_eq!(effects(&db, "rfd-seen"), 1);
}

/// `settle demo` writes a receivers file for its sample: the effects whose
/// replies were lost are found, a fresh key has no record, and the key the
/// order gateway forgot cannot be told.
#[test]
fn the_demo_receivers_know_some_sample_effects_and_not_others() {
    let dir = tempfile::tempdir().unwrap();
    let ledger_path = demo_ledger(dir.path());
    let folder = ledger_path.parent().unwrap();
    let receivers = Receivers::load(&folder.join("receivers.toml")).unwrap();
    let (ledger, _) =
        settle::store::Ledger::open(&ledger_path, settle::store::Access::ReadOnly).unwrap();
    let ask = |id: i64| {
        let op = ledger.detail(OperationId(id)).unwrap().operation;
        receivers::lookup(&receivers, &Subject::from(&op)).outcome
    };
    assert_eq!(
        ask(1),
        LookupOutcome::Found {
            result_id: "report-8812".into()
        }
    );
    assert_eq!(ask(2), LookupOutcome::NotFound);
    match ask(3) {
        LookupOutcome::Unknown { why } => assert!(why.contains("forgotten"), "{why}"),
        other => panic!("{other:?}"),
    }
}
