//! `settle drill show` and `settle drill import` through the real binary, on
//! the reference producer's real output (copied into tests/fixtures).

use crate::kit::*;

const SEVEN: &str = "tests/fixtures/drill-seven-cases.json";

#[test]
fn show_flags_the_two_duplicates_and_the_exhausted_case_in_both_formats() {
    let out = settle(&["drill", "show", SEVEN]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let verdict = |case: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{case} ")))
            .unwrap_or_else(|| panic!("no line for {case}:\n{text}"))
            .to_string()
    };
    for case in ["naive_retry", "changed_key"] {
        assert!(
            verdict(case).ends_with("duplicate effect"),
            "{}",
            verdict(case)
        );
    }
    assert!(verdict("budget_exhausted").ends_with("unresolved"));
    assert_eq!(text.matches("duplicate effect\n").count(), 2, "{text}");
    assert!(!out.stdout.contains(&0x1b));

    let out = settle(&["drill", "show", SEVEN, "--format", "json"]);
    assert_eq!(code(&out), 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let cases = v["files"][0]["cases"].as_array().unwrap();
    let by_verdict = |verdict: &str| -> Vec<&str> {
        cases
            .iter()
            .filter(|c| c["verdict"] == verdict)
            .map(|c| c["case"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        by_verdict("duplicate effect"),
        vec!["naive_retry", "changed_key"]
    );
    assert_eq!(by_verdict("unresolved"), vec!["budget_exhausted"]);
    // Both duplicates "passed": passing is not safety.
    assert!(cases.iter().all(|c| c["passed"] == true));
}

#[test]
fn bad_drill_files_name_the_place_and_exit_1() {
    let out = settle(&["drill", "show", "tests/fixtures/drill/truncated.json"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("truncated.json:26:") && err.contains("not valid JSON"),
        "{err}"
    );
    let out = settle(&["drill", "show", "tests/fixtures/drill/not-a-drill.json"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("`cases` array"), "{}", stderr(&out));
}

#[test]
fn import_brings_cases_in_once_with_the_states_their_outcomes_imply() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("drill.db");
    assert_eq!(code(&settle(&["init", l.to_str().unwrap()])), 0);
    let out = settle(&["drill", "import", SEVEN, l.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("7 imported"), "{}", stdout(&out));
    let before = dump(&l);
    let out = settle(&["drill", "import", SEVEN, l.to_str().unwrap()]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("0 imported, 7 already"),
        "{}",
        stdout(&out)
    );
    assert_eq!(before, dump(&l), "a second import changed the ledger");

    let states: Vec<(String, String)> = {
        let conn = sql(&l);
        let mut stmt = conn
            .prepare("SELECT idem_key, state FROM operations ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(states.len(), 7);
    assert!(states.iter().any(|(_, s)| s == "exhausted"));
    assert!(states.iter().any(|(_, s)| s == "conflict"));
    // The case without a key got a stable synthetic one.
    assert!(states[0].0.starts_with("drill:naive_retry:"), "{states:?}");
    // Its attempts and events came along.
    assert_eq!(
        query_i64(
            &l,
            "SELECT COUNT(*) FROM events WHERE event = 'committed' AND op_id = 1"
        ),
        2
    );
    // The queue now holds the exhausted and the conflict case.
    let out = settle(&["list", l.to_str().unwrap(), "--queue", "--format", "jsonl"]);
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
}
