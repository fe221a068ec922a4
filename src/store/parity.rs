//! The same store calls on every backend, answers compared: a backend
//! that can make a test ledger here ([`SCRATCHES`]) runs every case
//! without a line of its own. Each case makes a fresh ledger on each
//! backend that can make one here (a PostgreSQL server is started from the
//! installed binaries; without them that backend is skipped loudly), runs
//! the same calls through [`Ledger`], and asserts every backend answered as
//! the first. The fixture (operations, contracts, a decision script) is
//! shared with the backends' own tests.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use super::chain::ChainVerdict;
use super::{Ledger, postgres};
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryEnd, RetryRun};
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, NewAttempt, NewEvent, NewOperation, OpTypeContract,
    OperationId, Outcome, State, parse_time,
};
use crate::error::Error;

/// Runs `case` on a fresh, empty ledger of every registered backend that
/// can make one here, with a way to run plain SQL on it behind settle's
/// back (as a service would); asserts every answer equals the first
/// backend's and returns it.
pub(super) fn same_on_every_backend<T: Debug + PartialEq>(
    hint: &str,
    mut case: impl FnMut(&mut Ledger, &dyn Fn(&str)) -> T,
) -> T {
    let mut answers: Vec<(&str, T)> = Vec::new();
    for (name, scratch) in SCRATCHES {
        let Some(scratch) = scratch(hint) else {
            continue;
        };
        let mut ledger = Ledger::create(&scratch.ledger).unwrap();
        let exec = |sql: &str| (scratch.exec)(&scratch.ledger, sql);
        answers.push((name, case(&mut ledger, &exec)));
    }
    let mut answers = answers.into_iter();
    let (first_name, first) = answers.next().expect("no backend could make a ledger");
    for (name, answer) in answers {
        assert_eq!(answer, first, "{name} answered unlike {first_name}");
    }
    first
}

/// Each backend that can make a test ledger, by the name a failing case
/// says, and how it makes one (a job queue makes none: it is never
/// created, only found).
const SCRATCHES: [(&str, MakeScratch); 2] =
    [("PostgreSQL", postgres_scratch), ("SQLite", sqlite_scratch)];

/// How a backend makes a test ledger, given a hint to name it by.
type MakeScratch = fn(&str) -> Option<Scratch>;

/// Where a test ledger of one backend goes.
struct Scratch {
    /// What [`crate::store::Ledger::create`] takes: a file or an address.
    ledger: PathBuf,
    /// Runs plain SQL on the ledger, behind settle's back.
    exec: fn(&Path, &str),
    /// Keeps a temporary folder for as long as the ledger is used.
    _keep: Option<tempfile::TempDir>,
}

/// A fresh database on the test server, when one can be started.
fn postgres_scratch(hint: &str) -> Option<Scratch> {
    Some(Scratch {
        ledger: postgres::testing::fresh_database(hint)?,
        exec: |address: &Path, sql: &str| {
            postgres::testing::connect(address)
                .batch_execute(sql)
                .expect("plain SQL on a test ledger");
        },
        _keep: None,
    })
}

/// A file in a fresh temporary folder.
fn sqlite_scratch(_hint: &str) -> Option<Scratch> {
    let dir = tempfile::TempDir::new().ok()?;
    Some(Scratch {
        ledger: dir.path().join("ledger.db"),
        exec: |path: &Path, sql: &str| {
            rusqlite::Connection::open(path)
                .and_then(|c| c.execute_batch(sql))
                .expect("plain SQL on a test ledger");
        },
        _keep: Some(dir),
    })
}

pub(super) fn now() -> DateTime<Utc> {
    parse_time("2026-11-06T12:00:00Z").unwrap()
}

pub(super) fn op(key: &str, op_type: &str, state: State) -> NewOperation {
    NewOperation::builder("acme", op_type, key)
        .params(r#"{"n":1}"#)
        .state(state)
        .updated_at("2026-11-06T11:00:00Z")
        .attempt(NewAttempt {
            attempt: 1,
            started_at: "2026-11-06T10:00:01Z".into(),
            ended_at: Some("2026-11-06T10:00:31Z".into()),
            outcome: Outcome::Timeout,
            error: Some("read timeout".into()),
            response: None,
        })
        .build()
}

/// Ids 1..=7: 1 a committed effect, 2 a non-idempotent receiver, 3 an
/// expired key, 4 a passed deadline, 5 completed, 6 and 7 plain unknowns.
pub(super) fn fixture() -> (Vec<NewOperation>, Vec<OpTypeContract>) {
    let mut committed = op("k-committed", "pay", State::Unknown);
    committed.events.push(NewEvent {
        attempt: Some(1),
        at: "2026-11-06T10:00:20Z".into(),
        event: "committed".into(),
        detail: Some(r#"{"effect_id":"ch_1"}"#.into()),
    });
    let mut expired = op("k-expired", "pay", State::Unknown);
    expired.key_expires_at = Some("2026-11-06T11:59:00Z".into());
    let mut late = op("k-late", "pay", State::Exhausted);
    late.deadline_at = Some("2026-11-06T11:00:00Z".into());
    let mut done = op("k-done", "pay", State::Completed);
    done.result_id = Some("r-0".into());
    let ops = vec![
        committed,
        op("k-ship", "ship", State::Unknown),
        expired,
        late,
        done,
        op("k-6", "pay", State::Unknown),
        op("k-7", "pay", State::Conflict),
    ];
    let contracts = vec![
        OpTypeContract {
            op_type: "pay".into(),
            idempotent: true,
            key_retention_s: Some(86_400),
            description: Some("payments".into()),
        },
        OpTypeContract {
            op_type: "ship".into(),
            idempotent: false,
            key_retention_s: None,
            description: None,
        },
    ];
    (ops, contracts)
}

pub(super) fn draft(op: i64, kind: DecisionKind, version: i64) -> DecisionDraft {
    DecisionDraft {
        op_id: OperationId(op),
        kind,
        result_id: None,
        evidence: None,
        note: None,
        override_committed: false,
        operator: "ana".into(),
        expected_version: version,
        undoes: None,
    }
}

/// The script both backends run, one decision at a time.
pub(super) fn script() -> Vec<DecisionDraft> {
    use DecisionKind::*;
    let evidenced = |mut d: DecisionDraft| {
        d.evidence = Some("checked the receiver's dashboard".into());
        d
    };
    vec![
        draft(1, NotApplied, 0),
        evidenced(draft(1, NotApplied, 0)),
        draft(2, RetrySameKey, 0),
        draft(3, RetrySameKey, 0),
        draft(4, RetrySameKey, 0),
        DecisionDraft {
            result_id: Some("r-5".into()),
            ..draft(5, Applied, 0)
        },
        DecisionDraft {
            result_id: Some("r-1".into()),
            ..draft(1, Applied, 7)
        },
        DecisionDraft {
            result_id: Some("r-1".into()),
            note: Some("  ".into()),
            ..draft(1, Applied, 0)
        },
        DecisionDraft {
            undoes: Some(DecisionId(1)),
            note: Some("wrong operation".into()),
            ..draft(1, Reopen, 1)
        },
        draft(6, RetrySameKey, 0),
        draft(6, CancelRetry, 1),
        draft(6, CancelRetry, 2),
        draft(999, Applied, 0),
    ]
}

/// What a decision came to, without where the ledger is.
pub(super) fn outcome(r: &crate::error::Result<crate::domain::DecisionReceipt>) -> String {
    match r {
        Ok(r) => format!("ok {r:?}"),
        Err(Error::Refused { rule, reason, .. }) => format!("refused {rule:?}: {reason}"),
        Err(e @ Error::VersionConflict { .. }) => format!("conflict {e}"),
        Err(Error::NotFound { what, .. }) => format!("not found {what}"),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

pub(super) fn head(v: ChainVerdict) -> (u64, Option<(DecisionId, String)>) {
    match v {
        ChainVerdict::Intact { decisions, head } => (decisions, head),
        ChainVerdict::Broken { at, problem } => panic!("chain broken at {at}: {problem}"),
    }
}

#[test]
fn every_rule_refuses_and_every_decision_writes_the_same_on_every_backend() {
    let (said, (n, _)) = same_on_every_backend("script", |ledger, _| {
        let (ops, contracts) = fixture();
        let report = ledger.import(&ops, &contracts).unwrap();
        assert_eq!(report.inserted, 7);
        let said: Vec<String> = script()
            .iter()
            .map(|d| outcome(&ledger.record_decision(d, now())))
            .collect();
        // The same rows everywhere: the chain hash covers every column.
        (said, head(ledger.verify_chain().unwrap()))
    });
    let refused: Vec<&str> = said
        .iter()
        .filter_map(|o| o.strip_prefix("refused "))
        .map(|o| o.split(':').next().unwrap())
        .collect();
    assert_eq!(
        refused,
        [
            "EvidenceGiven",
            "CommittedEffect",
            "ContractIdempotent",
            "KeyNotExpired",
            "DeadlineNotPassed",
            "StateAllows",
            "StateAllows",
        ],
        "{said:#?}"
    );
    assert!(said[6].starts_with("conflict version conflict: operation 1 is at version 0"));
    assert_eq!(said.iter().filter(|o| o.starts_with("ok ")).count(), 4);
    assert_eq!(said.last().unwrap(), "not found 999");
    assert_eq!(n, 4);
}

#[test]
fn a_batch_skips_the_rows_a_rule_refuses_or_that_changed_on_every_backend() {
    let evidence = |mut d: DecisionDraft| {
        d.evidence = Some("receiver says no".into());
        d
    };
    let batch = vec![
        evidence(draft(6, DecisionKind::NotApplied, 0)),
        evidence(draft(7, DecisionKind::NotApplied, 3)),
        draft(2, DecisionKind::RetrySameKey, 0),
        evidence(draft(2, DecisionKind::NotApplied, 0)),
    ];
    let (said, (n, _)) = same_on_every_backend("batch", |ledger, _| {
        let (ops, contracts) = fixture();
        ledger.import(&ops, &contracts).unwrap();
        let judged: Vec<bool> = batch
            .iter()
            .map(|d| ledger.judge_decision(d, now()).is_ok())
            .collect();
        assert_eq!(judged, [true, false, false, true]);
        let outcomes = ledger.record_decisions(&batch, now()).unwrap();
        let said: Vec<String> = outcomes.iter().map(outcome).collect();
        (said, head(ledger.verify_chain().unwrap()))
    });
    assert_eq!(n, 2, "{said:#?}");
    assert!(said[1].starts_with("conflict"), "{said:#?}");
    assert!(
        said[2].starts_with("refused ContractIdempotent"),
        "{said:#?}"
    );
}

/// The demo's sample, built once in SQLite, for every backend's ledger to
/// copy (one build: the demo's rows need not come out the same twice).
pub(super) struct Sample {
    _dir: tempfile::TempDir,
    pub(super) ledger: Ledger,
}

pub(super) fn sample() -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let ledger = crate::demo::build(dir.path(), t(0)).unwrap().ledger;
    Sample { _dir: dir, ledger }
}

pub(super) fn t(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap() + chrono::Duration::seconds(seconds)
}

pub(super) fn claim(ledger: &mut Ledger, worker: &str, at: i64) -> Option<Claimed> {
    ledger
        .claim_retry(worker, Duration::from_secs(10), t(at))
        .unwrap()
}

pub(super) fn run_of(c: Option<Claimed>) -> RetryClaim {
    match c {
        Some(Claimed::Run(c)) => *c,
        other => panic!("wanted a claim to run, got {other:?}"),
    }
}

pub(super) fn completed(at: i64) -> RetryRun {
    RetryRun {
        end: RetryEnd::Completed {
            result_id: "refund-1".into(),
        },
        started_at: t(at),
        ended_at: t(at),
        command: Some("/bin/retry".into()),
        exit: "exit 0".into(),
    }
}

/// A lapsed claim re-taken, the first worker's end refused as lost, the
/// second's recorded: every answer and the operation's history alike.
/// The sample's retry_pending operation, with its queued request.
pub(super) const PENDING: OperationId = OperationId(15);

#[test]
fn claims_lapses_and_ends_read_the_same_on_every_backend() {
    let demo = sample();
    let (first, held, second, lost, done, after, detail) =
        same_on_every_backend("retry same", |ledger, _| {
            demo.ledger.copy_into(ledger, &mut |_, _| {}).unwrap();
            let first = run_of(claim(ledger, "a", 1));
            let held = claim(ledger, "b", 5);
            let second = run_of(claim(ledger, "b", 12));
            let lost = ledger.finish_retry(&first, &completed(13), t(13)).unwrap();
            let failed = RetryRun {
                end: RetryEnd::Failed {
                    why: "exit 1".into(),
                    timed_out: false,
                },
                ..completed(14)
            };
            let done = ledger.finish_retry(&second, &failed, t(14)).unwrap();
            let after = claim(ledger, "c", 30);
            let detail = ledger.detail(PENDING).unwrap();
            (first, held, second, lost, done, after, detail)
        });
    assert_eq!((first.run, second.run, second.attempt), (1, 2, 2));
    assert_eq!(held, None, "the lease held");
    assert!(
        matches!(&lost, Finish::Lost { held, .. } if held == "claimed by b"),
        "{lost:?}"
    );
    assert!(
        matches!(&done, Finish::Recorded(r) if r.status == "failed"
            && r.to_state == Some(State::Unknown)),
        "{done:?}"
    );
    assert_eq!(after, None, "a failed request is never claimed again");
    let words: Vec<&str> = detail.events.iter().map(|e| e.event.as_str()).collect();
    assert!(
        words.ends_with(&["retry_sent", "provider_error"]),
        "{words:?}"
    );
    assert_eq!(detail.retry_requests.last().unwrap().progress.runs, 2);
}

/// A key that expired while the request waited: refused in the claim's
/// transaction, in the same words, the operation back in triage.
#[test]
fn a_refused_claim_reads_the_same_on_every_backend() {
    let demo = sample();
    let (refused, _) = same_on_every_backend("retry refused", |ledger, exec| {
        demo.ledger.copy_into(ledger, &mut |_, _| {}).unwrap();
        exec("UPDATE operations SET key_expires_at = '2026-11-30T11:00:00Z' WHERE id = 15");
        (claim(ledger, "a", 1), ledger.detail(PENDING).unwrap())
    });
    let Some(Claimed::Refused(r)) = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!((r.status, &r.to_state), ("failed", &Some(State::Unknown)));
    assert!(r.outcome.contains("key expired"), "{}", r.outcome);
}

fn drill_verdict(duplicate: Option<&str>) -> crate::domain::DrillVerdict {
    crate::domain::DrillVerdict {
        id: 0,
        op_type: "pay".into(),
        run: format!("run-{}", duplicate.unwrap_or("clean")),
        drilled_at: "2026-11-06T11:30:00+00:00".into(),
        results: "out/drill-x/drill-results.json".into(),
        duplicate_case: duplicate.map(str::to_string),
        duplicate_why: duplicate.map(|_| "2 effects under key k".to_string()),
        params_ignored: duplicate.is_none(),
        flaws: duplicate.map_or(String::new(), |c| format!("duplicate in {c}\nsecond line")),
        operator: "ana".into(),
    }
}

#[test]
fn drill_verdicts_are_kept_append_only_and_guard_a_same_key_retry_on_every_backend() {
    let said = same_on_every_backend("drills", |ledger, exec| {
        let (ops, contracts) = fixture();
        ledger.import(&ops, &contracts).unwrap();
        // Never drilled: no table yet, and the contract is only declared.
        let before = ledger.latest_drill("pay").unwrap();
        let declared = ledger.detail(OperationId(6)).unwrap().drill;
        let contract = ledger.op_type_contract("pay").unwrap();
        let first = ledger.record_drill(&drill_verdict(None)).unwrap();
        let second = ledger
            .record_drill(&drill_verdict(Some("concurrent_same_key")))
            .unwrap();
        let latest = ledger.latest_drill("pay").unwrap();
        let other_type = ledger.latest_drill("ship").unwrap();
        let retry = draft(6, DecisionKind::RetrySameKey, 0);
        let refused = outcome(&ledger.record_decision(&retry, now()));
        let overridden = outcome(&ledger.record_decision(
            &DecisionDraft {
                override_committed: true,
                note: Some("fixed the race in v2".into()),
                ..retry
            },
            now(),
        ));
        let edit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exec("UPDATE settle_drills SET flaws = ''")
        }));
        let delete = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exec("DELETE FROM settle_drills")
        }));
        let kept = ledger.latest_drill("pay").unwrap();
        (
            before,
            declared,
            contract,
            (first, second),
            latest.clone(),
            other_type,
            refused,
            overridden.starts_with("ok "),
            (edit.is_err(), delete.is_err()),
            kept == latest,
        )
    });
    let (before, declared, contract, ids, latest, other, refused, written, refusals, kept) = said;
    assert_eq!((before, declared, other), (None, None, None));
    assert_eq!(contract.map(|c| c.key_retention_s), Some(Some(86_400)));
    assert_eq!(ids, (1, 2));
    let latest = latest.unwrap();
    assert_eq!(
        latest.duplicate_case.as_deref(),
        Some("concurrent_same_key")
    );
    assert_eq!(
        latest.flaws,
        "duplicate in concurrent_same_key\nsecond line"
    );
    assert!(refused.starts_with("refused Drilled:"), "{refused}");
    assert!(refused.contains("run run-concurrent_same_key"), "{refused}");
    assert!(written, "an override with a note is written");
    assert_eq!(refusals, (true, true), "settle_drills is append-only");
    assert!(kept);
}

/// A copy carries the drills' verdicts with their ids, still append-only,
/// the next one numbered after them, and back out again; a ledger never
/// drilled is copied without the table.
#[test]
fn a_copy_carries_the_drill_verdicts_on_every_backend() {
    let never = sample();
    let mut drilled = sample();
    drilled
        .ledger
        .record_drill(&drill_verdict(Some("crash_mid_call")))
        .unwrap();
    drilled.ledger.record_drill(&drill_verdict(None)).unwrap();
    let said = same_on_every_backend("copy drills", |ledger, exec| {
        let copied = drilled.ledger.copy_into(ledger, &mut |_, _| {}).unwrap();
        let latest = ledger.latest_drill("pay").unwrap();
        let edit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exec("UPDATE settle_drills SET flaws = ''")
        }));
        let next = ledger.record_drill(&drill_verdict(None)).unwrap();
        // And out again, to a new SQLite file.
        let dir = tempfile::tempdir().unwrap();
        let mut back = Ledger::create(&dir.path().join("back.db")).unwrap();
        let again = ledger.copy_into(&mut back, &mut |_, _| {}).unwrap();
        let back_latest = back.latest_drill("pay").unwrap().map(|d| d.id);
        (
            copied.rows("settle_drills"),
            latest.map(|d| (d.id, d.run)),
            edit.is_err(),
            next,
            again.rows("settle_drills"),
            back_latest,
        )
    });
    assert_eq!(
        said,
        (2, Some((2, "run-clean".into())), true, 3, 3, Some(3)),
        "rows, latest, append-only, next id, copied back, its latest"
    );
    let untouched = same_on_every_backend("copy undrilled", |ledger, exec| {
        let copied = never.ledger.copy_into(ledger, &mut |_, _| {}).unwrap();
        let table = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exec("SELECT id FROM settle_drills")
        }));
        (copied.rows("settle_drills"), table.is_err())
    });
    assert_eq!(untouched, (0, true), "a ledger never drilled stays one");
}
