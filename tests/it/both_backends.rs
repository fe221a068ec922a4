//! Cases that hold on SQLite and on PostgreSQL alike, written once
//! (`kit/backends.rs`): a service's ledger is adopted on the first
//! writable open and never on a read, once, without touching its rows; the
//! audit trail refuses edits in the same words.

use crate::kit::backends;

use crate::kit::*;
use settle::store::{Access, Ledger};

const SERVICE_ROWS: &str = "
INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts, created_at, updated_at)
VALUES ('acme', 'charge', 'k-1', 'fp', 'unknown', 3, '2026-11-30T10:00:00Z', '2026-11-30T10:00:00Z'),
       ('acme', 'charge', 'k-2', 'fp', 'completed', 3, '2026-11-30T10:00:00Z', '2026-11-30T10:00:00Z');
INSERT INTO events (op_id, at, event, detail) VALUES (1, '2026-11-30T10:00:05Z', 'timeout', 'upstream 504');
";

#[test]
fn a_service_ledger_is_adopted_on_the_first_writable_open_never_on_a_read() {
    backends::each_backend("adoption", |l| {
        l.exec(SERVICE_ROWS);
        let (ro, report) = Ledger::open(l.path(), Access::ReadOnly).unwrap();
        assert!(ro.is_read_only());
        assert!(report.not_adopted.is_some(), "{:?}: {report:?}", l.backend);
        assert!(!l.has_table("decisions"), "{:?}: a read adopted", l.backend);
        drop(ro);

        let out = settle(&["adopt", l.arg()]);
        assert_eq!(code(&out), 0, "{:?}: {}", l.backend, stderr(&out));
        assert!(
            stdout(&out).contains("adopted") && stdout(&out).contains("no service rows changed"),
            "{:?}: {}",
            l.backend,
            stdout(&out)
        );
        assert!(l.has_table("decisions") && l.has_table("retry_requests"));
        assert_eq!(l.query_i64("SELECT count(*) FROM operations"), 2);
        let again = settle(&["adopt", l.arg()]);
        assert!(
            stdout(&again).contains("is already adopted"),
            "{:?}: {}",
            l.backend,
            stdout(&again)
        );
    });
}

#[test]
fn the_audit_trail_refuses_edits_and_deletes_in_the_same_words() {
    let mut said = Vec::new();
    backends::each_backend("append only", |l| {
        assert_eq!(code(&settle(&["adopt", l.arg()])), 0);
        l.exec(
            "INSERT INTO decisions (op_id, decision, from_state, to_state, operator, decided_at, op_version)
             VALUES (1, 'applied', 'unknown', 'completed', 'ana', '2026-11-30T12:00:00Z', 0)",
        );
        let refusals = [
            l.exec_err("UPDATE decisions SET note = 'edited'"),
            l.exec_err("DELETE FROM decisions"),
        ];
        assert!(
            refusals[0].contains("decisions are append-only"),
            "{refusals:?}"
        );
        assert_eq!(l.query_i64("SELECT count(*) FROM decisions"), 1);
        said.push(refusals);
    });
    // Every backend that ran says what the first said.
    assert!(said.windows(2).all(|w| w[0] == w[1]), "{said:?}");
}

#[test]
fn a_probe_is_recorded_shown_and_kept_append_only_on_either_backend() {
    let dir = tempfile::tempdir().unwrap();
    let receivers = dir.path().join("receivers.toml");
    std::fs::write(
        &receivers,
        "[receivers.\"*\"]\nlookup = [\"/bin/sh\", \"-c\", \"echo report-77\"]\ntimeout_s = 5\n",
    )
    .unwrap();
    backends::each_backend("probe", |l| {
        l.exec(SERVICE_ROWS);
        let out = settle(&[
            "probe",
            l.arg(),
            "1",
            "--receivers",
            receivers.to_str().unwrap(),
            "--operator",
            "ana",
        ]);
        assert_eq!(code(&out), 0, "{:?}: {}", l.backend, stderr(&out));
        assert!(stdout(&out).contains("report-77"), "{}", stdout(&out));
        let show = settle(&["show", l.arg(), "1", "--format", "json"]);
        let json: serde_json::Value = serde_json::from_str(&stdout(&show)).unwrap();
        let probes = json["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 1, "{:?}: {json}", l.backend);
        assert_eq!(probes[0]["result_id"], "report-77");
        assert!(
            l.exec_err("DELETE FROM settle_probes")
                .contains("probes are append-only"),
            "{:?}",
            l.backend
        );
    });
}

#[test]
fn a_whole_list_past_its_first_page_has_every_match_once_newest_first() {
    backends::each_backend("whole_list", |l| {
        // Past the first page of 1,000, where the list streams the rest.
        l.exec(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
             INSERT INTO operations (account, op_type, idem_key, fingerprint, state, max_attempts,
                 created_at, updated_at)
             SELECT 'acme', 'charge', 'k-' || i, 'fp',
                 CASE WHEN i % 2 = 0 THEN 'unknown' ELSE 'completed' END, 3,
                 '2026-11-30T10:00:00Z', '2026-11-30T10:00:00Z' FROM n",
        );
        let ids = |args: &[&str]| {
            let out = settle(args);
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            jsonl_ids(&out)
        };
        let every: Vec<i64> = (1..=2500).rev().collect();
        assert_eq!(ids(&["list", l.arg(), "--all", "--format", "jsonl"]), every);
        let queue: Vec<i64> = every.iter().copied().filter(|i| i % 2 == 0).collect();
        assert_eq!(
            ids(&["list", l.arg(), "--queue", "--all", "--format", "jsonl"]),
            queue
        );
        // A reader that stops early is no error.
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; '{}' list '{}' --all --format jsonl | head -n 1500 >/dev/null",
                env!("CARGO_BIN_EXE_settle"),
                l.arg()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!said.contains("writing output"), "{said}");
    });
}
