//! The drill module through the library API: the reference producer's
//! seven-case file, other producers' files (extra, missing and wrong-typed
//! fields, unknown event words, inconsistent evidence, broken JSON), a
//! 10,000-case file, and the import plan.

use std::path::Path;

use settle::domain::Outcome;
use settle::drill::{self, Analysis, AttemptClass, DrillFile, Verdict};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn load(name: &str) -> (DrillFile, Analysis) {
    let file = drill::read_file(Path::new(&fixture(name))).unwrap();
    let analysis = drill::analyse(&file);
    (file, analysis)
}

fn verdict_of(analysis: &Analysis, case: &str) -> Verdict {
    analysis
        .cases
        .iter()
        .find(|c| c.case == case)
        .unwrap_or_else(|| panic!("no case {case}"))
        .verdict
}

fn verdicts(analysis: &Analysis, verdict: Verdict) -> Vec<&str> {
    analysis
        .cases
        .iter()
        .filter(|c| c.verdict == verdict)
        .map(|c| c.case.as_str())
        .collect()
}

fn findings_of<'a>(analysis: &'a Analysis, case: &str) -> Vec<&'a str> {
    analysis
        .findings
        .iter()
        .filter(|f| f.case.as_deref() == Some(case))
        .map(|f| f.text.as_str())
        .collect()
}

// --- the reference producer's seven cases ---------------------------------

#[test]
fn seven_cases_flag_both_duplicates_and_the_exhausted_case() {
    let (file, analysis) = load("drill-seven-cases.json");
    assert_eq!(file.cases.len(), 7);
    assert!(file.warnings.is_empty(), "{:?}", file.warnings);
    assert_eq!(
        verdicts(&analysis, Verdict::DuplicateEffect),
        ["naive_retry", "changed_key"]
    );
    assert_eq!(
        verdicts(&analysis, Verdict::Unresolved),
        ["budget_exhausted"]
    );
    // The receiver refused the changed parameters: no duplicate, but the
    // caller ended with a conflict, which is not "safe".
    assert_eq!(
        verdicts(&analysis, Verdict::Conflict),
        ["parameter_mismatch"]
    );
    assert!(
        findings_of(&analysis, "parameter_mismatch")
            .iter()
            .any(|t| t.starts_with("conflict: attempt 2 was refused"))
    );
    assert_eq!(
        verdicts(&analysis, Verdict::Safe),
        ["stable_key", "fault_before_effect", "later_invocation"]
    );
}

#[test]
fn a_passing_duplicate_is_still_called_a_duplicate() {
    let (file, analysis) = load("drill-seven-cases.json");
    assert_eq!(file.passed, Some(true));
    let naive = &analysis.cases[0];
    assert_eq!(naive.passed_claimed, Some(true));
    assert_eq!(naive.passed_recomputed, Some(true));
    assert_eq!(naive.effect_count, 2);
    assert!(naive.duplicate);
    assert!(
        findings_of(&analysis, "naive_retry")
            .iter()
            .any(|t| t.contains("passing is not safety")),
        "{:?}",
        analysis.findings
    );
}

#[test]
fn attempts_are_classified_by_what_the_caller_can_know() {
    let (_, analysis) = load("drill-seven-cases.json");
    let classes = |case: &str| -> Vec<AttemptClass> {
        analysis
            .cases
            .iter()
            .find(|c| c.case == case)
            .unwrap()
            .attempts
            .iter()
            .map(|a| a.class)
            .collect()
    };
    use AttemptClass::*;
    assert_eq!(classes("stable_key"), [OutcomeUnknown, AppliedAcknowledged]);
    assert_eq!(
        classes("parameter_mismatch"),
        [OutcomeUnknown, InvalidIntent]
    );
    assert_eq!(classes("budget_exhausted"), [KnownNotApplied; 3]);
    let stable = &analysis.cases[2];
    assert!(stable.attempts[0].committed, "timeout after commit");
    assert_eq!(stable.replayed_effects, ["report-1"]);
    assert_eq!(
        analysis.cases[6].caller_result.as_deref(),
        Some("exhausted")
    );
    assert!(analysis.cases[6].budget_exhausted);
}

#[test]
fn seven_cases_text_is_one_aligned_line_per_case() {
    let (file, analysis) = load("drill-seven-cases.json");
    let text = drill::render_text(&[(file, analysis)]);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("CASE")).unwrap();
    let verdict_col = lines[header].find("VERDICT").unwrap();
    let rows = &lines[header + 1..header + 8];
    assert!(rows[0].starts_with("naive_retry "));
    assert!(rows[0].contains(" 2/3 "));
    assert_eq!(&rows[0][verdict_col..], "duplicate effect");
    assert_eq!(&rows[6][verdict_col..], "unresolved");
    assert!(rows[6].contains(" exhausted "));
    assert!(text.contains("findings:\n"));
    assert!(text.contains("state_file=\"naive_retry.state.json\""));
    assert!(text.contains("python=\"3.11.7\""));
}

#[test]
fn json_report_is_stable_and_keeps_raw_fields() {
    let (file, analysis) = load("drill-seven-cases.json");
    let files = [(file, analysis)];
    let json = drill::render_json(&files);
    assert_eq!(json, drill::render_json(&files));
    assert_eq!(json["format"], "settle-drill-show/1");
    let f = &json["files"][0];
    assert_eq!(f["extra"]["platform"], "Linux");
    assert_eq!(f["cases"][0]["verdict"], "duplicate effect");
    assert_eq!(f["cases"][0]["committed_effects"][1], "report-2");
    assert_eq!(
        f["cases"][0]["extra"]["state_file"],
        "naive_retry.state.json"
    );
    assert_eq!(f["cases"][6]["attempts"][0]["class"], "known not applied");
    assert!(
        f["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["case"] == "changed_key" && x["severity"] == "error")
    );
}

// --- other producers ------------------------------------------------------

#[test]
fn another_producer_is_read_with_extra_missing_and_wrong_fields() {
    let (file, analysis) = load("drill/other-producer.json");
    assert_eq!(file.format, drill::FORMAT, "no format means retry-drill/1");
    assert_eq!(file.generated_at, None);
    assert_eq!(file.cases.len(), 3, "the string entry is skipped");
    assert_eq!(
        file.extra.keys().collect::<Vec<_>>(),
        ["runner", "host"],
        "unknown top-level fields kept in order"
    );
    let lease = &file.cases[0];
    assert_eq!(lease.extra["owner"], "payments");
    assert_eq!(lease.operation.as_ref().unwrap().extra["region"], "eu");
    assert_eq!(lease.attempts[0].extra["latency_ms"], 12);
    assert_eq!(lease.final_state.as_ref().unwrap().extra["shard"], 3);

    // A wrong-typed field is a warning naming case and field, not a failure.
    let timing = &file.cases[1];
    assert_eq!(timing.max_attempts, None);
    assert!(
        file.warnings
            .iter()
            .any(|w| w.contains("still_timing_out") && w.contains("max_attempts")),
        "{:?}",
        file.warnings
    );
    assert!(file.warnings.iter().any(|w| w.contains("case #4")));

    assert_eq!(
        verdicts(&analysis, Verdict::Safe),
        ["lease_then_success", "no_final_state"]
    );
    assert_eq!(
        verdicts(&analysis, Verdict::Unresolved),
        ["still_timing_out"]
    );
    // A failing case: the expectation is checked against recomputed values.
    let failing = &analysis.cases[1];
    assert_eq!(failing.passed_recomputed, Some(false));
    assert_eq!(failing.caller_result.as_deref(), Some("timeout"));
    assert!(
        findings_of(&analysis, "still_timing_out")
            .iter()
            .any(|t| t.contains("expected caller_result = \"success\", got \"timeout\""))
    );
    // Without a final state, committed events are the count.
    assert_eq!(analysis.cases[2].effect_count, 1);
    assert_eq!(analysis.cases[2].committed_effects, ["78"]);
}

#[test]
fn unknown_event_words_are_kept_and_shown_sanitised() {
    let (file, analysis) = load("drill/other-producer.json");
    assert_eq!(analysis.cases[0].unknown_events, ["lease_renewed"]);
    assert_eq!(
        analysis.cases[1].unknown_events,
        ["socket_reset\u{1b}]0;pwned\u{7}"]
    );
    let text = drill::render_text(&[(file, analysis)]);
    assert!(text.contains("`lease_renewed`"));
    assert!(text.contains("socket_reset␛]0;pwned␇"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "no raw escape reaches the terminal"
    );
    assert!(!text.contains('\u{7}'));
}

#[test]
fn inconsistent_evidence_is_reported_not_smoothed_over() {
    let (_, analysis) = load("drill/inconsistent.json");
    let lost = findings_of(&analysis, "lost_commit");
    assert!(
        lost.iter()
            .any(|t| t.contains("events and final state disagree")
                && t.contains("2 committed event(s)")
                && t.contains("1 effect(s)")),
        "{lost:?}"
    );
    // Two commits for one operation is a duplicate whatever the final state
    // and `passed` say.
    assert_eq!(
        verdict_of(&analysis, "lost_commit"),
        Verdict::DuplicateEffect
    );

    let phantom = findings_of(&analysis, "phantom_replay");
    assert!(
        phantom
            .iter()
            .any(|t| t.contains("replayed effect report-9 that no committed event created")),
        "{phantom:?}"
    );
    assert!(
        phantom
            .iter()
            .any(|t| t.contains("observed attempt_count = 3, but the file shows 1")),
        "{phantom:?}"
    );
    // The producer measured 3 attempts where it recorded 1, and passed the
    // case on that: recomputed, it fails, and so does the file.
    assert!(
        phantom
            .iter()
            .any(|t| t.contains("says passed=true, recomputed it is false")),
        "{phantom:?}"
    );
    assert!(
        analysis
            .findings
            .iter()
            .any(|f| f.case.is_none() && f.text.contains("passed=true"))
    );
}

#[test]
fn an_empty_case_list_is_a_drill_with_nothing_to_judge() {
    let (file, analysis) = load("drill/empty-cases.json");
    assert!(file.cases.is_empty());
    assert!(analysis.cases.is_empty());
    assert!(analysis.findings.is_empty());
    let text = drill::render_text(&[(file, analysis)]);
    assert!(text.contains("0 case(s)"));
    assert!(text.contains("(no cases)"));
}

#[test]
fn truncated_json_is_an_error_with_line_and_column() {
    let path = fixture("drill/truncated.json");
    let err = drill::read_file(Path::new(&path)).unwrap_err();
    match &err {
        settle::Error::Drill { position, .. } => {
            let (line, column) = position.unwrap();
            assert_eq!(line, 26);
            assert!(column > 0);
        }
        other => panic!("not a drill error: {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("truncated.json:26:"), "{message}");
    assert!(message.contains("not valid JSON"), "{message}");
}

#[test]
fn json_that_is_not_a_drill_says_what_was_expected() {
    let err = drill::read_file(Path::new(&fixture("drill/not-a-drill.json"))).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("expected a JSON object with a `cases` array"),
        "{message}"
    );
    assert!(message.contains("found an array"), "{message}");

    let err = drill::parse(Path::new("x.json"), r#"{"format": "retry-drill/1"}"#).unwrap_err();
    assert!(err.to_string().contains("without `cases`"), "{err}");
    let err = drill::parse(Path::new("x.json"), r#"{"cases": {}}"#).unwrap_err();
    assert!(err.to_string().contains("`cases` as an object"), "{err}");
}

#[test]
fn a_newer_format_is_read_best_effort_with_a_warning() {
    let (file, analysis) = load("drill/newer-format.json");
    assert_eq!(file.format, "retry-drill/2");
    assert!(
        file.warnings[0].contains("retry-drill/2") && file.warnings[0].contains("best-effort"),
        "{:?}",
        file.warnings
    );
    assert_eq!(
        file.extra["schema_url"],
        "https://example.invalid/retry-drill/2"
    );
    assert_eq!(file.cases[0].extra["trace"]["spans"], 4);
    assert_eq!(verdicts(&analysis, Verdict::Safe), ["stable_key"]);
    let text = drill::render_text(&[(file, analysis)]);
    assert!(text.contains("warning: format `retry-drill/2`"), "{text}");
}

// --- scale ----------------------------------------------------------------

#[test]
fn ten_thousand_cases_are_read_and_analysed() {
    let seven: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("drill-seven-cases.json")).unwrap())
            .unwrap();
    let template = seven["cases"].as_array().unwrap();
    let cases: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            let mut case = template[i % 7].clone();
            case["case"] = format!("{}-{i}", case["case"].as_str().unwrap()).into();
            case
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drill-results.json");
    let mut big = seven.clone();
    big["cases"] = cases.into();
    std::fs::write(&path, serde_json::to_string(&big).unwrap()).unwrap();

    let file = drill::read_file(&path).unwrap();
    let analysis = drill::analyse(&file);
    assert_eq!(analysis.cases.len(), 10_000);
    // Template positions: 0,1 duplicate; 3 conflict; 6 unresolved; rest safe.
    let expect = |positions: &[usize]| (0..10_000).filter(|i| positions.contains(&(i % 7))).count();
    assert_eq!(analysis.count(Verdict::DuplicateEffect), expect(&[0, 1]));
    assert_eq!(analysis.count(Verdict::Conflict), expect(&[3]));
    assert_eq!(analysis.count(Verdict::Unresolved), expect(&[6]));
    assert_eq!(analysis.count(Verdict::Safe), expect(&[2, 4, 5]));
    assert_eq!(drill::import_plan(&file, "big").len(), 10_000);
}

// --- import plan ----------------------------------------------------------

#[test]
fn import_plan_gives_distinct_stable_keys_and_implied_states() {
    let (file, _) = load("drill-seven-cases.json");
    let plan = drill::import_plan(&file, "drill-seven-cases.json");
    assert_eq!(plan, drill::import_plan(&file, "drill-seven-cases.json"));
    let again = drill::read_file(Path::new(&fixture("drill-seven-cases.json"))).unwrap();
    assert_eq!(plan, drill::import_plan(&again, "drill-seven-cases.json"));

    let keys: std::collections::BTreeSet<_> = plan.iter().map(|op| &op.idem_key).collect();
    assert_eq!(keys.len(), 7, "each case is its own operation");
    assert_eq!(
        plan[0].idem_key,
        "drill:naive_retry:sha256:75da2c3be85b373dc96aed07107b75f6452fc826b0ed0280d55b7b0442e04850"
    );
    assert_eq!(plan[2].idem_key, "run-003");
    assert_eq!(plan[0].account, "acct-drill");
    assert_eq!(plan[0].op_type, "create_report");

    let states: Vec<&str> = plan.iter().map(|op| op.state.as_str()).collect();
    assert_eq!(
        states,
        [
            "completed",
            "completed",
            "completed",
            "conflict",
            "completed",
            "completed",
            "exhausted"
        ]
    );
    assert_eq!(plan[0].result_id.as_deref(), Some("report-2"));
    assert_eq!(plan[2].result_id.as_deref(), Some("report-1"));
    assert_eq!(plan[6].result_id, None);

    let naive = &plan[0];
    assert_eq!(naive.max_attempts, 3);
    assert_eq!(naive.created_at, "2026-11-29T21:32:01.999Z");
    assert_eq!(naive.attempts[0].outcome, Outcome::Timeout);
    assert_eq!(naive.attempts[1].outcome, Outcome::Success);
    assert_eq!(naive.events.len(), 4);
    assert_eq!(naive.events[0].event, "committed");
    let detail: serde_json::Value =
        serde_json::from_str(naive.events[0].detail.as_deref().unwrap()).unwrap();
    assert_eq!(detail["effect_id"], "report-1");
    assert_eq!(detail.get("at"), None, "known fields are not detail");
    assert_eq!(naive.events[3].detail, None);
    assert_eq!(
        naive.params.as_deref(),
        Some(r#"{"report":"weekly-sales","week":"2026-W45"}"#)
    );
}

#[test]
fn import_plan_defaults_unknown_and_not_applied() {
    let (file, _) = load("drill/other-producer.json");
    let plan = drill::import_plan(&file, "other-producer.json");
    let states: Vec<&str> = plan.iter().map(|op| op.state.as_str()).collect();
    assert_eq!(states, ["completed", "unknown", "completed"]);
    assert_eq!(
        plan[0].result_id.as_deref(),
        Some("INV-77"),
        "any *_id field"
    );
    assert_eq!(plan[2].result_id.as_deref(), Some("78"));
    assert_eq!(plan[2].account, "other-producer.json");
    assert_eq!(plan[2].op_type, "drill_case");
    assert_eq!(
        plan[2].fingerprint,
        drill::fingerprint(&serde_json::json!({"invoice": 78}))
    );
    assert!(plan[2].idem_key.starts_with("drill:no_final_state:sha256:"));
    // No time anywhere in the file: a fixed epoch, so re-imports agree.
    assert_eq!(plan[2].created_at, "1970-01-01T00:00:00Z");
    assert_eq!(plan[2].attempts[0].attempt, 1);

    let text = r#"{"generated_at": "2026-12-01T00:00:00Z", "cases": [
        {"case": "gave_up_early", "max_attempts": 3,
         "attempts": [{"attempt": 1, "fault": "before_effect", "result": "timeout"}]},
        {"case": "a", "operation": {"account": "x", "op_type": "y", "key": "shared"}},
        {"case": "b", "operation": {"account": "x", "op_type": "y", "key": "shared"}}
    ]}"#;
    let file = drill::parse(Path::new("inline.json"), text).unwrap();
    let plan = drill::import_plan(&file, "inline");
    assert_eq!(plan[0].state.as_str(), "not_applied");
    assert_eq!(plan[0].created_at, "2026-12-01T00:00:00Z");
    assert_ne!(plan[1].idem_key, plan[2].idem_key, "a shared key is split");
    assert!(plan[1].idem_key.starts_with("drill:a:"));
    assert!(plan[2].idem_key.starts_with("drill:b:"));
}
