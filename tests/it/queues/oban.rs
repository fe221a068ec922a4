//! settle on Oban's own tables, end to end: a throwaway cluster with
//! Oban's schema as its migrations define it and jobs moved as its engine
//! moves them (`tests/fixtures/jobqueue/oban*.sql`). The queue is what
//! Oban cannot settle by itself (discarded, retryable with no attempt
//! left, executing past the Lifeline's hour), and each decision is made
//! in Oban's own terms: `complete_job`, `cancel_job` with the `pkill`
//! signal for an executing job, `retry_job`. No other job moves.

use crate::kit::jobqueue;
use crate::kit::pg;

use postgres::fallible_iterator::FallibleIterator;
use std::path::Path;
use std::time::Duration;

use crate::kit::*;
use jobqueue::*;

fn one(db: &Path, sql: &str) -> String {
    pg::connect(db).query_one(sql, &[]).unwrap().get(0)
}

/// The jobs Oban leaves to an operator, asked of its table directly.
const STUCK: &str = "SELECT id FROM oban_jobs
    WHERE state = 'discarded'
       OR (state = 'retryable' AND attempt >= max_attempts)
       OR (state = 'executing' AND attempted_at < timezone('UTC', now()) - interval '1 hour')
    ORDER BY id";

#[test]
fn the_queue_is_what_oban_cannot_settle_and_each_job_reads_as_an_operation() {
    let Some(db) = engine("oban queue", OBAN) else {
        return;
    };
    let stuck: Vec<i64> = pg::connect(&db)
        .query(STUCK, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(stuck, [1, 2, 6]);
    assert_eq!(queue(&db), stuck);

    let discarded = show(&db, "1");
    for seen in [
        "exhausted",
        "payments",
        "MyApp.Charge",
        "(Req.TransportError) timeout",
    ] {
        assert!(discarded.contains(seen), "{seen} in\n{discarded}");
    }
    assert_eq!(attempt_lines(&discarded).len(), 2, "{discarded}");
    let orphan = show(&db, "2");
    assert!(orphan.contains("reserved (stale"), "{orphan}");
    assert!(orphan.contains("web-gone"), "{orphan}");
    // Every job reads, in Oban's words where settle has none.
    let all = settle(&["list", db.to_str().unwrap(), "--all", "--format", "jsonl"]);
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    let mut states: Vec<String> = stdout(&all)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| format!("{} {}", r["id"], r["state"].as_str().unwrap()))
        .collect();
    states.sort_by_key(|s| s.split(' ').next().unwrap().parse::<i64>().unwrap());
    assert_eq!(
        states,
        [
            "1 exhausted",
            "2 reserved",
            "3 reserved",
            "4 completed",
            "5 retryable",
            "6 exhausted",
            "7 not_applied",
            "8 scheduled",
            "9 available",
            "10 suspended",
        ]
    );
}

#[test]
fn decisions_on_oban_jobs_are_made_as_its_engine_makes_them_and_move_nothing_else() {
    let Some(db) = engine("oban decide", OBAN) else {
        return;
    };
    let address = db.to_str().unwrap();
    let mut client = pg::connect(&db);
    let before = snapshot(&mut client, "oban_jobs");

    // A version the operator did not see is refused, nothing written.
    let stale = settle(&[
        "decide",
        address,
        "1",
        "--applied",
        "--result-id",
        "ch_1",
        "--expect-version",
        "1",
        "--operator",
        "ann",
    ]);
    assert_eq!(code(&stale), 4, "{}", stderr(&stale));
    assert_eq!(snapshot(&mut client, "oban_jobs"), before);

    // Applied: completed, as complete_job leaves it, with settle's result id.
    decide(&db, "1", &["--applied", "--result-id", "ch_1"]);
    assert_eq!(
        one(
            &db,
            "SELECT state::text || ' ' || (completed_at IS NOT NULL)::text || ' '
                 || (meta ->> 'settle_result_id')
             FROM oban_jobs WHERE id = 1"
        ),
        "completed true ch_1"
    );

    // Not applied on the orphan: cancel_job's pkill signal, then cancelled.
    let mut listener = pg::connect(&db);
    listener
        .batch_execute("LISTEN \"public.oban_signal\"")
        .unwrap();
    decide(
        &db,
        "2",
        &["--not-applied", "--evidence", "no refund in the provider"],
    );
    let signal = listener
        .notifications()
        .timeout_iter(Duration::from_secs(5))
        .next()
        .unwrap()
        .expect("the pkill signal");
    assert_eq!(signal.channel(), "public.oban_signal");
    let payload: serde_json::Value = serde_json::from_str(signal.payload()).unwrap();
    assert_eq!(payload, serde_json::json!({"action": "pkill", "job_id": 2}));
    assert_eq!(
        one(
            &db,
            "SELECT state::text || ' ' || (cancelled_at IS NOT NULL)::text
             FROM oban_jobs WHERE id = 2"
        ),
        "cancelled true"
    );

    // Retry with the same key, the worker declared idempotent: available
    // now with one more attempt allowed, as retry_job leaves it.
    let dir = tempfile::tempdir().unwrap();
    let receivers = dir.path().join("receivers.toml");
    std::fs::write(
        &receivers,
        "[receivers.\"MyApp.Charge\"]\nidempotent = true\n",
    )
    .unwrap();
    decide(
        &db,
        "6",
        &[
            "--retry-same-key",
            "--receivers",
            receivers.to_str().unwrap(),
        ],
    );
    assert_eq!(
        one(
            &db,
            "SELECT state::text || ' ' || attempt || '/' || max_attempts || ' '
                 || (scheduled_at <= timezone('UTC', now()))::text
             FROM oban_jobs WHERE id = 6"
        ),
        "available 1/2 true"
    );
    // Oban's producer would fetch it now: its fetch's condition holds.
    assert_eq!(
        one(
            &db,
            "SELECT string_agg(id::text, ',') FROM oban_jobs
             WHERE state = 'available' AND queue = 'payments' AND attempt < max_attempts"
        ),
        "6"
    );

    only_decided_changed(before, snapshot(&mut client, "oban_jobs"), &[1, 2, 6]);
    assert_eq!(queue(&db), Vec::<i64>::new());
    audit_holds(&db, 3);
    assert_eq!(
        one(
            &db,
            "SELECT string_agg(decision, ',' ORDER BY op_id) FROM settle.decisions"
        ),
        "applied,not_applied,retry_same_key"
    );
}
