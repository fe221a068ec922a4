//! `settle probe` through the real binary: receivers are tiny shell
//! scripts in a temp folder, run as `/bin/sh SCRIPT` (exec'ing a file this
//! process just wrote can fail with ETXTBSY while a parallel test forks).
//! Each probe must land in `settle_probes`, show in `settle show`, and no
//! byte a lookup prints may reach the output as a raw control.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::kit::*;

/// Writes `body` as the lookup of every op type, with `timeout_s`, and
/// returns the receivers file.
fn receivers(dir: &Path, body: &str, timeout_s: u32) -> PathBuf {
    let script = dir.join("lookup.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    let file = dir.join("receivers.toml");
    std::fs::write(
        &file,
        format!(
            "[receivers.\"*\"]\nlookup = [\"/bin/sh\", {:?}]\ntimeout_s = {timeout_s}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    file
}

fn probe(ledger: &Path, receivers: &Path, args: &[&str]) -> Output {
    let mut all = vec![
        "probe",
        ledger.to_str().unwrap(),
        "--receivers",
        receivers.to_str().unwrap(),
        "--operator",
        "alice",
    ];
    all.extend_from_slice(args);
    settle(&all)
}

fn probes(ledger: &Path) -> i64 {
    query_i64(ledger, "SELECT COUNT(*) FROM settle_probes")
}

/// Characters that act on a terminal: C0 but newline, DEL, C1.
fn raw_controls(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.chars()
                .any(|c| (c.is_control() && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c))
        })
        .map(|l| format!("{l:?}"))
        .collect()
}

#[test]
fn a_found_lookup_is_recorded_with_its_result_id_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(
        dir.path(),
        "[ \"$SETTLE_KEY\" = ord-7731-a ] && echo report-77",
        5,
    );

    let out = probe(&ledger, &r, &["2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = stdout(&out);
    for part in ["#2", "ord-7731-a", "found", "report-77"] {
        assert!(line.contains(part), "{part} in {line}");
    }
    assert_eq!(
        query_text(
            &ledger,
            "SELECT outcome || ' ' || result_id || ' ' || exit || ' ' || operator || ' ' || idem_key
             FROM settle_probes WHERE op_id = 2"
        ),
        "found report-77 exit 0 alice ord-7731-a"
    );

    let shown = stdout(&settle(&["show", ledger.to_str().unwrap(), "2"]));
    assert!(shown.contains("found report-77 · exit 0"), "{shown}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&settle(&[
        "show",
        ledger.to_str().unwrap(),
        "2",
        "--format",
        "json",
    ])))
    .unwrap();
    assert_eq!(json["probes"][0]["result_id"], "report-77");
    assert_eq!(json["probes"][0]["outcome"], "found");
}

#[test]
fn probes_are_appended_newest_last_and_a_not_found_one_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let found = receivers(dir.path(), "echo report-77", 5);
    assert_eq!(code(&probe(&ledger, &found, &["2"])), 0);
    let not_found = receivers(dir.path(), "exit 3", 5);
    let out = probe(&ledger, &not_found, &["2", "--format", "jsonl"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(row["outcome"], "not_found");
    assert_eq!(row["exit"], "exit 3");

    let shown = stdout(&settle(&["show", ledger.to_str().unwrap(), "2"]));
    let found_at = shown.find("found report-77").unwrap();
    let not_found_at = shown.find("not found · exit 3").unwrap();
    assert!(found_at < not_found_at, "newest last: {shown}");
    assert_eq!(probes(&ledger), 2);
}

#[test]
fn a_hanging_lookup_is_killed_at_its_timeout_and_reads_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(dir.path(), "sleep 600", 1);

    let out = probe(&ledger, &r, &["3"]);
    assert_eq!(
        code(&out),
        6,
        "unknown has its own status: {}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("unknown"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("timed out after 1 s"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("1 of 1 lookups read unknown"));
    assert_eq!(
        query_text(
            &ledger,
            "SELECT outcome || ' | ' || exit FROM settle_probes WHERE op_id = 3"
        ),
        "unknown | timed out after 1 s (killed)"
    );
}

#[test]
fn escape_sequences_a_lookup_prints_never_reach_the_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    // A found id with an OSC title and a clear screen in it; an unknown
    // answer whose stderr colours and carries an 8-bit CSI.
    let r = receivers(
        dir.path(),
        "if [ \"$SETTLE_KEY\" = ord-7731-a ]; then printf 'rep\\033]0;pwned\\007-1\\n\\033[2J'; exit 0; fi\n\
         printf '\\033[31mred \\302\\233 6n\\n' >&2; exit 1",
        5,
    );
    let l = ledger.to_str().unwrap();
    let mut leaks = Vec::new();
    for format in ["table", "json", "jsonl"] {
        let out = probe(&ledger, &r, &["2", "4", "--format", format]);
        assert_eq!(code(&out), 6, "{}", stderr(&out));
        leaks.extend(raw_controls(&stdout(&out)));
        leaks.extend(raw_controls(&stderr(&out)));
    }
    for args in [vec!["show", l, "2"], vec!["show", l, "4"]] {
        let mut json = args.clone();
        json.extend(["--format", "json"]);
        for out in [settle(&args), settle(&json)] {
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            leaks.extend(raw_controls(&stdout(&out)));
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
    // Shown made visible, not dropped: the reader sees something was there.
    let shown = stdout(&settle(&["show", l, "4"]));
    assert!(shown.contains("␛[31mred"), "{shown}");
}

#[test]
fn a_filter_needs_a_limit_or_all_before_any_receiver_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let r = receivers(dir.path(), "exit 3", 5);

    let refused = probe(&ledger, &r, &["--filter", "type:place_order"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--limit N"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("--all"), "{}", stderr(&refused));
    assert_eq!(probes(&ledger), 0);

    let limited = probe(
        &ledger,
        &r,
        &["--filter", "type:place_order", "--limit", "2"],
    );
    assert_eq!(code(&limited), 0, "{}", stderr(&limited));
    assert_eq!(stdout(&limited).lines().count(), 2, "{}", stdout(&limited));
    assert!(stderr(&limited).contains("more not probed"));
    assert_eq!(probes(&ledger), 2);

    let all = probe(&ledger, &r, &["--filter", "type:place_order", "--all"]);
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    let n = query_i64(
        &ledger,
        "SELECT COUNT(*) FROM operations WHERE op_type = 'place_order'
         AND state IN ('unknown', 'exhausted', 'conflict')",
    );
    assert_eq!(stdout(&all).lines().count() as i64, n);
}

#[test]
fn a_ledger_that_cannot_be_written_is_refused_before_any_lookup_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let ran = dir.path().join("ran");
    let r = receivers(
        dir.path(),
        &format!("touch {:?}; exit 3", ran.display().to_string()),
        5,
    );
    // Adopted to the current schema first: the refusal must be about
    // writing a probe, not about an upgrade.
    assert_eq!(code(&settle(&["adopt", ledger.to_str().unwrap()])), 0);
    let mut perms = std::fs::metadata(&ledger).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&ledger, perms).unwrap();

    let out = probe(&ledger, &r, &["2"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("not writable"), "{}", stderr(&out));
    assert!(
        !ran.exists(),
        "no lookup may run when its probe cannot be recorded"
    );
}

#[test]
fn without_a_receivers_file_nothing_is_probed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = demo_ledger(dir.path());
    let out = bin()
        .args([
            "probe",
            ledger.to_str().unwrap(),
            "2",
            "--operator",
            "alice",
        ])
        .env("XDG_CONFIG_HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no receivers file"),
        "{}",
        stderr(&out)
    );
}
