//! The CLI against awkward ledgers and hostile text: ambiguous addresses, CSV
//! cells that a spreadsheet would run, truncated lists that must say so,
//! refusals in the ledger's words. The real binary, checked with SQL
//! afterwards.

use crate::kit::*;
use std::path::Path;

fn decide(ledger: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["decide", ledger.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--operator", "tester"]);
    settle(&all)
}

/// A service ledger created with plain SQL, as given (no UNIQUE constraint
/// when `unique` is false), holding `rows` of
/// `(id, account, op_type, key, state)`.
fn service_ledger(path: &Path, unique: bool, rows: &[(i64, &str, &str, &str, &str)]) {
    let schema = if unique {
        SERVICE_SCHEMA.to_string()
    } else {
        SERVICE_SCHEMA.replace(", UNIQUE (account, op_type, idem_key)", "")
    };
    let conn = sql(path);
    conn.execute_batch(&schema).unwrap();
    for (id, account, op_type, key, state) in rows {
        conn.execute(
            "INSERT INTO operations VALUES (?1, ?2, ?3, ?4, 'sha256:ab', NULL, ?5, NULL, 3,
                NULL, NULL, NULL, '2026-11-06T10:15:00Z', '2026-11-06T10:16:00Z', 1)",
            rusqlite::params![id, account, op_type, key, state],
        )
        .unwrap();
    }
}

// --- ambiguous addresses -------------------------------------------------

#[test]
fn an_address_naming_two_operations_is_refused_with_both_ids() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("dup.db");
    service_ledger(
        &l,
        false,
        &[
            (1, "acme", "create_report", "k-1", "unknown"),
            (2, "acme", "create_report", "k-2", "unknown"),
            (3, "acme", "create_report", "k-1", "unknown"),
        ],
    );
    let ls = l.to_str().unwrap();

    let out = settle(&["show", ls, "acme/create_report/k-1"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("ambiguous") && err.contains("1, 3"), "{err}");
    assert!(stdout(&out).is_empty(), "nothing shown for a guess");

    let out = decide(
        &l,
        &["acme/create_report/k-1", "--not-applied", "--evidence", "x"],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stderr(&out).contains("1, 3"), "{}", stderr(&out));
    assert_eq!(query_i64(&l, "SELECT COUNT(*) FROM decisions"), 0);
    assert_eq!(state(&l, 1), "unknown");
    assert_eq!(state(&l, 3), "unknown");

    // The unique address and the ids still work.
    assert_eq!(code(&settle(&["show", ls, "acme/create_report/k-2"])), 0);
    assert_eq!(code(&settle(&["show", ls, "3"])), 0);
}

// --- refusals and writes in the ledger's words ----------------------------

#[test]
fn reopening_an_applied_decision_takes_back_its_result_id() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    assert_eq!(
        query_i64(
            &l,
            "SELECT COUNT(*) FROM operations WHERE id = 1 AND result_id IS NULL"
        ),
        1
    );
    let out = decide(&l, &["1", "--applied", "--result-id", "report-8812"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let d = query_i64(&l, "SELECT MAX(id) FROM decisions");
    let out = decide(&l, &["1", "--reopen", &d.to_string()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 1), "unknown");
    assert_eq!(
        query_i64(
            &l,
            "SELECT COUNT(*) FROM operations WHERE id = 1 AND result_id IS NULL"
        ),
        1,
        "the reopened operation still names the result of the undone decision"
    );
}

#[test]
fn a_refusal_names_an_unknown_state_by_its_word() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("weird.db");
    service_ledger(&l, true, &[(1, "acme", "t", "k-1", "weird_state")]);
    let out = decide(&l, &["1", "--not-applied", "--evidence", "x"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("\"weird_state\""), "{err}");
    assert!(!err.contains("Unrecognized"), "Rust debug text: {err}");
}

#[test]
fn an_unwritable_file_says_to_check_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let before = dump(&l);
    std::fs::set_permissions(&l, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = decide(&l, &["1", "--not-applied", "--evidence", "x"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("not writable") && err.contains("permissions"),
        "{err}"
    );
    assert!(
        !err.contains("--read-only"),
        "no --read-only was given: {err}"
    );
    assert_eq!(before, dump(&l), "nothing written");
}

#[test]
fn an_unwritable_folder_says_the_wal_files_live_there() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let folder = l.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = decide(&l, &["1", "--not-applied", "--evidence", "x"]);
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("folder") && err.contains("-wal"), "{err}");
    assert!(
        !err.contains("--read-only"),
        "no --read-only was given: {err}"
    );
}

// --- CSV formula injection, forged stand-ins ------------------------------

#[test]
fn csv_cells_a_spreadsheet_would_run_are_neutralised_and_json_stays_exact() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("csv.db");
    service_ledger(
        &l,
        true,
        &[
            (
                1,
                "=HYPERLINK(\"http://evil\",\"x\")",
                "t",
                "k-1",
                "unknown",
            ),
            (2, "@SUM(A1)", "+cmd", "-2+3", "unknown"),
        ],
    );
    let ls = l.to_str().unwrap();
    let out = settle(&["list", ls, "--format", "csv"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let csv = stdout(&out);
    assert!(
        csv.contains(r#""'=HYPERLINK(""http://evil"",""x"")""#),
        "{csv}"
    );
    assert!(csv.contains(r#","'@SUM(A1)","'+cmd","'-2+3","#), "{csv}");
    for line in csv.lines().skip(1) {
        for cell in line.split(',') {
            assert!(!cell.starts_with(['=', '+', '@']), "{cell} in {line}");
        }
    }

    let out = settle(&["list", ls, "--format", "jsonl"]);
    let json = stdout(&out);
    assert!(json.contains(r#""account":"@SUM(A1)""#), "{json}");
    assert!(
        json.contains(r#""account":"=HYPERLINK(\"http://evil\",\"x\")""#),
        "{json}"
    );
}

#[test]
fn a_literal_escape_glyph_in_the_data_does_not_pass_for_a_real_escape() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("glyph.db");
    service_ledger(
        &l,
        true,
        &[
            (1, "acme", "t", "real\u{1b}[31m", "unknown"),
            (2, "acme", "t", "fake␛[31m", "unknown"),
        ],
    );
    let out = settle(&["list", l.to_str().unwrap()]);
    let table = stdout(&out);
    assert!(table.contains("real␛[31m"), "{table}");
    assert!(table.contains("fake<U+241B>[31m"), "{table}");
    assert!(!table.contains("fake␛"), "{table}");
    assert!(!table.contains('\u{1b}'), "{table}");
}

// --- no silent truncation -------------------------------------------------

fn many_operations(path: &Path, n: i64) {
    let rows: Vec<(i64, String)> = (1..=n).map(|i| (i, format!("k-{i}"))).collect();
    let rows: Vec<(i64, &str, &str, &str, &str)> = rows
        .iter()
        .map(|(i, k)| (*i, "acme", "t", k.as_str(), "unknown"))
        .collect();
    service_ledger(path, true, &rows);
}

#[test]
fn list_machine_formats_write_every_row_and_the_table_says_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("many.db");
    many_operations(&l, 150);
    let ls = l.to_str().unwrap();

    for format in ["jsonl", "csv"] {
        let out = settle(&["list", ls, "--format", format]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let header = usize::from(format == "csv");
        assert_eq!(stdout(&out).lines().count(), 150 + header, "{format}");
        assert!(!stderr(&out).contains("more match"), "{}", stderr(&out));
    }
    let out = settle(&["list", ls, "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 150);

    let out = settle(&["list", ls]);
    assert_eq!(stdout(&out).lines().count(), 101, "header and 100 rows");
    assert!(
        stderr(&out).contains("showing the newest 100 of 150 operations; 50 more match"),
        "{}",
        stderr(&out)
    );

    // A limit the script asked for still says what it left out.
    let out = settle(&["list", ls, "--format", "jsonl", "--limit", "10"]);
    assert_eq!(stdout(&out).lines().count(), 10);
    assert!(
        stderr(&out).contains("showing the newest 10 of 150 operations; 140 more match"),
        "{}",
        stderr(&out)
    );

    let out = settle(&["list", ls, "--limit", "0"]);
    assert!(
        !stderr(&out).contains("no operations match"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("showing the newest 0 of 150 operations"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn audit_says_how_many_decisions_it_left_out_and_offers_all() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let ls = l.to_str().unwrap();
    // applied, then reopen, again and again: one operation, many decisions.
    for _ in 0..26 {
        let out = decide(&l, &["1", "--applied", "--result-id", "report-8812"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let d = query_i64(&l, "SELECT MAX(id) FROM decisions");
        let out = decide(&l, &["1", "--reopen", &d.to_string()]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let total = usize::try_from(query_i64(&l, "SELECT COUNT(*) FROM decisions")).unwrap();
    assert!(total > 50, "{total}");

    let out = settle(&["audit", ls]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 50);
    let notice = format!(
        "showing the newest 50 of {total} decisions; {} more match (--limit N or --all)",
        total - 50
    );
    assert!(stderr(&out).contains(&notice), "{}", stderr(&out));

    let out = settle(&["audit", ls, "--all"]);
    assert_eq!(stdout(&out).lines().count(), total);
    assert!(!stderr(&out).contains("more match"), "{}", stderr(&out));

    for format in ["jsonl", "csv"] {
        let out = settle(&["audit", ls, "--format", format]);
        let header = usize::from(format == "csv");
        assert_eq!(stdout(&out).lines().count(), total + header, "{format}");
    }
    let out = settle(&["audit", ls, "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), total);

    let out = settle(&["audit", ls, "--limit", "0"]);
    assert!(!stderr(&out).contains("no decisions"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("showing the newest 0 of {total} decisions")),
        "{}",
        stderr(&out)
    );
}
