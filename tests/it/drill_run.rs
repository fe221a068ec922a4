//! `settle drill run` through the real binary against the reference
//! receiver (`settle receiver`, its own SQLite database), sound and with
//! each known flaw: every case meets its expectation, the effect counts
//! are the receiver's own, each flaw is named, and a duplicate under one
//! key then refuses `settle decide --retry-same-key`.

use crate::kit::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The declared retention, short so the expiry cases run within the
/// default --max-wait.
const RETENTION_S: i64 = 4;

struct Rig {
    dir: tempfile::TempDir,
    ledger: PathBuf,
    receivers: PathBuf,
    db: PathBuf,
}

/// A ledger declaring `place_order` idempotent with a short retention and
/// holding one unknown operation of it, and a receivers file for the
/// reference receiver (with `flaw`, `effects` and `faults` as asked).
fn rig(flaw: Option<&str>, effects: bool, faults: bool) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
    let out = settle(&["init", ledger.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    sql(&ledger)
        .execute_batch(&format!(
            "INSERT INTO op_types VALUES ('place_order', 1, {RETENTION_S}, 'orders');
             INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
               max_attempts, created_at, updated_at)
             VALUES ('acme', 'place_order', 'k-1', 'sha256:00', 'unknown', 3, '{now}', '{now}');"
        ))
        .unwrap();
    let (receivers, db) = reference_receivers(dir.path(), RETENTION_S, flaw, effects, faults);
    Rig {
        dir,
        ledger,
        receivers,
        db,
    }
}

impl Rig {
    /// `settle drill run` with `extra` flags; its output and results.
    fn drill(&self, extra: &[&str]) -> (Output, Value) {
        let out_dir = self.dir.path().join("out");
        let mut args = vec![
            "drill",
            "run",
            "--receivers",
            self.receivers.to_str().unwrap(),
            "--op-type",
            "place_order",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = bin()
            .args(&args)
            .env("SETTLE_OPERATOR", "drill-test")
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
        let file = newest_results(&out_dir);
        let results = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        (out, results)
    }

    fn with_ledger(&self) -> Vec<&str> {
        vec!["--ledger", self.ledger.to_str().unwrap()]
    }

    /// The receiver's own effects for a case's account, in id order.
    fn receiver_effects(&self, account: &str) -> Vec<String> {
        let conn = sql(&self.db);
        let mut stmt = conn
            .prepare("SELECT result_id FROM effects WHERE account = ?1 ORDER BY id")
            .unwrap();
        stmt.query_map([account], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// `settle decide --retry-same-key` on the operation. The short
    /// retention the drill measured would refuse any retry by itself, so the
    /// ledger first declares the retention a production receiver keeps: the
    /// drill's verdict must refuse alone.
    fn decide_retry(&self, extra: &[&str]) -> Output {
        sql(&self.ledger)
            .execute_batch(
                "UPDATE op_types SET key_retention_s = 86400 WHERE op_type = 'place_order'",
            )
            .unwrap();
        let mut args = vec![
            "decide",
            self.ledger.to_str().unwrap(),
            "1",
            "--retry-same-key",
            "--operator",
            "ana",
        ];
        args.extend_from_slice(extra);
        settle(&args)
    }
}

fn newest_results(out: &Path) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let dir = runs.pop().expect("a drill-<stamp> folder");
    assert!(
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("drill-")
    );
    dir.join("drill-results.json")
}

fn case<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {results:#}"))
}

#[test]
fn every_case_meets_its_expectation_and_counts_the_receivers_own_effects() {
    let rig = rig(None, true, true);
    let started = Instant::now();
    let (out, results) = rig.drill(&rig.with_ledger());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert_eq!(results["format"], "retry-drill/1");
    assert_eq!(results["passed"], true, "{}", stdout(&out));
    assert_eq!(results["cases"].as_array().unwrap().len(), 12);
    let not_run = results["not_run"].as_array().unwrap();
    assert_eq!(not_run.len(), 1, "{not_run:?}");
    assert_eq!(not_run[0]["case"], "naive_retry");
    for c in results["cases"].as_array().unwrap() {
        assert_eq!(c["passed"], true, "{c:#}");
        assert!(c["expectation"].as_str().is_some_and(|e| !e.is_empty()));
        assert!(c["elapsed_ms"].as_u64().is_some());
        // The count in the results is the receiver's own.
        let account = c["operation"]["account"].as_str().unwrap();
        let own = rig.receiver_effects(account);
        let listed: Vec<String> = c["final_state"]["effects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(listed, own, "{}", c["case"]);
        assert_eq!(c["observed"]["effect_count"], own.len(), "{}", c["case"]);
    }
    let expiry = case(&results, "expiry_retry");
    assert_eq!(expiry["observed"]["effect_count"], 2);
    assert!(expiry["hazard"].as_str().unwrap().contains("second effect"));
    let retention = case(&results, "observed_retention");
    let observed = retention["observed"]["observed_retention_s"]
        .as_f64()
        .unwrap();
    assert!((3.0..5.5).contains(&observed), "{observed}");
    let verdict = &results["verdict"];
    assert_eq!(verdict["flaws"], Value::Array(vec![]), "{verdict:#}");
    assert_eq!(verdict["honours_keys_under_concurrency"]["answer"], "yes");
    assert_eq!(verdict["refuses_changed_params"]["answer"], "yes");
    assert_eq!(verdict["replays_same_result_id"]["answer"], "yes");
    assert_eq!(verdict["retention"]["as_declared"]["answer"], "yes");
    assert!(stdout(&out).contains("verdict: place_order: no flaw found"));

    // The ledger keeps the verdict; show says the contract was drilled, and
    // a clean drill refuses nothing the other rules allow.
    assert_eq!(
        query_i64(&rig.ledger, "SELECT count(*) FROM settle_drills"),
        1
    );
    let shown = stdout(&settle(&["show", rig.ledger.to_str().unwrap(), "1"]));
    assert!(shown.contains("contract     drilled on "), "{shown}");
    assert_eq!(code(&rig.decide_retry(&[])), 0);

    // Every reader of drills reads it as any drill.
    let file = newest_results(&rig.dir.path().join("out"));
    let show = settle(&["drill", "show", file.to_str().unwrap()]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    assert!(stdout(&show).contains("concurrent_same_key"));
    let other = rig.dir.path().join("imported.db");
    assert_eq!(code(&settle(&["init", other.to_str().unwrap()])), 0);
    let import = settle(&[
        "drill",
        "import",
        file.to_str().unwrap(),
        other.to_str().unwrap(),
    ]);
    assert_eq!(code(&import), 0, "{}", stderr(&import));
    assert_eq!(query_i64(&other, "SELECT count(*) FROM operations"), 12);
}

#[test]
fn a_check_then_insert_race_is_named_and_refuses_a_same_key_retry_until_overridden() {
    let rig = rig(Some("race"), true, false);
    let mut args = vec!["--cases", "concurrent_same_key"];
    args.extend(rig.with_ledger());
    let (_, results) = rig.drill(&args);
    let c = case(&results, "concurrent_same_key");
    let own = rig.receiver_effects(c["operation"]["account"].as_str().unwrap());
    assert!(own.len() > 1, "the race made one effect: {own:?}");
    assert_eq!(c["observed"]["effect_count"], own.len());
    assert_eq!(c["passed"], false);
    let verdict = &results["verdict"];
    assert_eq!(verdict["honours_keys_under_concurrency"]["answer"], "no");
    assert_eq!(
        verdict["duplicate_under_one_key"]["case"],
        "concurrent_same_key"
    );
    let run = results["run"].as_str().unwrap();

    let refused = rig.decide_retry(&[]);
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("concurrent_same_key"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains(run), "{}", stderr(&refused));
    assert_eq!(query_i64(&rig.ledger, "SELECT count(*) FROM decisions"), 0);
    // A later run that plays other cases does not lift the finding.
    let mut args = vec!["--cases", "later_invocation"];
    args.extend(rig.with_ledger());
    rig.drill(&args);
    let still = rig.decide_retry(&[]);
    assert_eq!(code(&still), 3, "{}", stderr(&still));
    assert!(stderr(&still).contains(run), "{}", stderr(&still));
    let written = rig.decide_retry(&["--override", "--note", "race fixed in v2, redeployed"]);
    assert_eq!(code(&written), 0, "{}", stderr(&written));
    assert_eq!(query_i64(&rig.ledger, "SELECT count(*) FROM decisions"), 1);
}

#[test]
fn params_ignored_on_replay_are_named_and_do_not_refuse_a_same_key_retry() {
    let rig = rig(Some("ignore-params"), true, false);
    let mut args = vec!["--cases", "parameter_mismatch,later_invocation"];
    args.extend(rig.with_ledger());
    let (_, results) = rig.drill(&args);
    let c = case(&results, "parameter_mismatch");
    assert_eq!(c["observed"]["caller_result"], "success");
    let own = rig.receiver_effects(c["operation"]["account"].as_str().unwrap());
    assert_eq!(own.len(), 1);
    let verdict = &results["verdict"];
    assert_eq!(verdict["refuses_changed_params"]["answer"], "no");
    assert_eq!(verdict["params_ignored_on_replay"], true);
    assert_eq!(verdict["duplicate_under_one_key"], Value::Null);
    let out = rig.decide_retry(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn keys_forgotten_sooner_than_declared_are_named_and_refuse_a_same_key_retry() {
    let rig = rig(Some("forget-early"), true, false);
    let mut args = vec!["--cases", "observed_retention"];
    args.extend(rig.with_ledger());
    let (_, results) = rig.drill(&args);
    let c = case(&results, "observed_retention");
    assert_eq!(c["observed"]["remembered_as_declared"], false);
    let own = rig.receiver_effects(c["operation"]["account"].as_str().unwrap());
    assert_eq!(
        own.len(),
        2,
        "a retry within the declared retention duplicated"
    );
    let verdict = &results["verdict"];
    assert_eq!(verdict["retention"]["as_declared"]["answer"], "no");
    assert_eq!(
        verdict["duplicate_under_one_key"]["case"],
        "observed_retention"
    );
    let refused = rig.decide_retry(&[]);
    assert_eq!(code(&refused), 3);
    assert!(
        stderr(&refused).contains("observed_retention"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn without_faults_or_effects_cases_say_why_not_and_no_count_is_guessed() {
    let rig = rig(None, false, false);
    let (out, results) = rig.drill(&["--max-wait", "2", "--concurrency", "3"]);
    let not_run = results["not_run"].as_array().unwrap();
    let why = |id: &str| {
        not_run
            .iter()
            .find(|n| n["case"] == id)
            .map(|n| n["why"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        why("lost_response"),
        "not run: receiver declares no fault injection"
    );
    assert_eq!(
        why("crash_mid_call"),
        "not run: receiver declares no fault injection"
    );
    assert!(
        why("expiry_retry").contains("declared key_retention_s"),
        "no ledger given"
    );
    assert!(stdout(&out).contains("skip  lost_response"));
    let c = case(&results, "concurrent_same_key");
    assert_eq!(c["attempts"].as_array().unwrap().len(), 3);
    assert!(c["observed"].get("effect_count").is_none(), "{c:#}");
    assert!(
        c["effect_count_unknown"]
            .as_str()
            .unwrap()
            .contains("effects")
    );
    assert_eq!(c["passed"], Value::Null);
    assert_eq!(
        results["verdict"]["honours_keys_under_concurrency"]["answer"],
        "unknown"
    );

    let (_, results) = rig.drill(&[
        "--cases",
        "expiry_retry",
        "--max-wait",
        "2",
        "--ledger",
        rig.ledger.to_str().unwrap(),
    ]);
    assert_eq!(
        results["not_run"][0]["why"],
        format!("not run: retention {RETENTION_S} s exceeds --max-wait")
    );
}

#[test]
fn ctrl_c_kills_the_running_calls_and_writes_what_finished() {
    let rig = rig(None, true, true);
    let out_dir = rig.dir.path().join("out");
    let mut child = bin()
        .args([
            "drill",
            "run",
            "--receivers",
            rig.receivers.to_str().unwrap(),
            "--op-type",
            "place_order",
            "--cases",
            "later_invocation,expiry_retry",
            "--ledger",
            rig.ledger.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .env("SETTLE_OPERATOR", "drill-test")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let stopped = Instant::now();
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(2),
        "the wait was not cut"
    );
    assert_eq!(status.code(), Some(130));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(newest_results(&out_dir)).unwrap()).unwrap();
    assert_eq!(results["interrupted"], true);
    let cases: Vec<&str> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["case"].as_str().unwrap())
        .collect();
    assert_eq!(cases, ["later_invocation"]);
    assert_eq!(
        query_i64(
            &rig.ledger,
            "SELECT count(*) FROM sqlite_master WHERE name = 'settle_drills'"
        ),
        0,
        "an interrupted run is not recorded as the verdict"
    );
}

/// 90 days, as a production `op_types` row declares it.
const NINETY_DAYS_S: i64 = 90 * 24 * 3600;

/// The rig's receiver replaced by one keeping keys `retention_s` (a
/// quarter of it with `forget-early`), behind a declared 90 days.
fn ninety_day_rig(retention_s: i64, flaw: Option<&str>) -> Rig {
    let rig = rig(None, true, false);
    reference_receivers(rig.dir.path(), retention_s, flaw, true, false);
    sql(&rig.ledger)
        .execute_batch(&format!(
            "UPDATE op_types SET key_retention_s = {NINETY_DAYS_S} WHERE op_type = 'place_order'"
        ))
        .unwrap();
    rig
}

#[test]
fn a_receiver_that_forgets_keys_after_2_s_behind_90_days_is_caught_within_max_wait() {
    let rig = ninety_day_rig(8, Some("forget-early"));
    let mut args = vec!["--cases", "observed_retention", "--max-wait", "10"];
    args.extend(rig.with_ledger());
    let started = Instant::now();
    let (out, results) = rig.drill(&args);
    assert!(started.elapsed() < Duration::from_secs(30));
    let c = case(&results, "observed_retention");
    let observed = c["observed"]["observed_retention_s"].as_f64().unwrap();
    // The receiver keeps keys in whole seconds: 2 s from the second the
    // key came is more than 1 s and at most 2 s after the call, and the
    // watch ends at --max-wait.
    assert!(observed > 1.0 && observed <= 10.0, "{observed}");
    assert_eq!(c["observed"]["remembered_as_declared"], false);
    let retention = &results["verdict"]["retention"]["as_declared"];
    assert_eq!(retention["answer"], "no", "{retention:#}");
    let why = retention["why"].as_str().unwrap();
    assert!(
        why.starts_with("keys forgotten after ")
            && why.ends_with(&format!("of a declared {NINETY_DAYS_S} s")),
        "{why}"
    );
    assert!(
        stdout(&out).contains("keys forgotten after"),
        "{}",
        stdout(&out)
    );

    // Recorded, it refuses a same-key retry, naming the drill; an
    // override with a note is written.
    let refused = rig.decide_retry(&[]);
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("observed_retention"),
        "{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("drilled on"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(query_i64(&rig.ledger, "SELECT count(*) FROM decisions"), 0);
    let overridden = rig.decide_retry(&["--override", "--note", "the receiver's TTL was raised"]);
    assert_eq!(code(&overridden), 0, "{}", stderr(&overridden));
    assert_eq!(query_i64(&rig.ledger, "SELECT count(*) FROM decisions"), 1);
}

#[test]
fn a_key_still_remembered_when_max_wait_ends_is_not_proven_and_refuses_nothing() {
    let rig = ninety_day_rig(NINETY_DAYS_S, None);
    let mut args = vec!["--cases", "observed_retention", "--max-wait", "2"];
    args.extend(rig.with_ledger());
    let (_, results) = rig.drill(&args);
    let c = case(&results, "observed_retention");
    assert_eq!(c["observed"]["remembered_as_declared"], Value::Null);
    assert_eq!(c["passed"], Value::Null, "{c:#}");
    let verdict = &results["verdict"];
    assert_eq!(verdict["retention"]["as_declared"]["answer"], "unknown");
    assert_eq!(
        verdict["retention"]["as_declared"]["why"],
        format!("remembered at least 2.0 s of a declared {NINETY_DAYS_S} s: not proven")
    );
    assert_eq!(verdict["flaws"], Value::Array(vec![]), "{verdict:#}");
    let out = rig.decide_retry(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
