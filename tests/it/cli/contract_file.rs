//! A task's contract declared in the receivers file, through the real
//! binary on a real SQLite ledger (the bundled sample data): where
//! `op_types` has no row, the file's word is the contract `settle decide`,
//! `settle show` and the worker hold a same-key retry to; where both
//! declare, the stricter wins.

use std::path::Path;

use crate::kit::*;

/// Operation 13 of the sample is a `provision_account` with no `op_types`
/// row; 4 is a `send_invoice` whose row says not idempotent; 2 is a
/// `place_order` whose row keeps keys a day.
const NO_ROW: &str = "13";

fn run(ledger: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![args[0], ledger.to_str().unwrap()];
    all.extend_from_slice(&args[1..]);
    settle(&all)
}

fn write(dir: &Path, text: &str) -> String {
    let file = dir.join("receivers.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn the_file_alone_declares_the_contract_a_retry_needs() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let decide = ["decide", NO_ROW, "--retry-same-key", "--operator", "t"];

    let before = dump(&l);
    let out = run(&l, &decide);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("no op_types row"), "{}", stderr(&out));
    assert_eq!(before, dump(&l), "a refused decision wrote something");

    let file = write(
        dir.path(),
        "[receivers.provision_account]\nretry = [\"/bin/sh\", \"-c\", \"echo prov-1\"]\n\
         idempotent = true\nkey_retention_s = 604800\n",
    );
    let show = run(&l, &["show", NO_ROW, "--receivers", &file]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    assert!(
        text.contains(&format!("contract     declared by {file} (never drilled)")),
        "{text}"
    );
    assert!(
        text.contains("idempotent (honours keys), keeps keys 7d"),
        "{text}"
    );
    let json = run(
        &l,
        &["show", NO_ROW, "--receivers", &file, "--format", "json"],
    );
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        json["contract_source"],
        format!("declared by {file} (never drilled)")
    );
    assert_eq!(json["contract"]["idempotent"], true);

    let mut with_file = decide.to_vec();
    with_file.extend(["--receivers", &file]);
    let out = run(&l, &with_file);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 13), "retry_pending");

    // The worker judges the claim again, on the same declaration.
    let out = run(&l, &["worker", "--once", "--receivers", &file]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&l, 13), "completed", "{}", stderr(&out));
    assert_eq!(
        query_text(&l, "SELECT result_id FROM operations WHERE id = 13"),
        "prov-1"
    );
}

#[test]
fn where_both_declare_the_stricter_wins_and_the_line_says_both() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    let file = write(
        dir.path(),
        "[receivers.send_invoice]\nidempotent = true\n\
         [receivers.place_order]\nidempotent = true\nkey_retention_s = 1\n\
         [receivers.refund_payment]\nidempotent = true\n",
    );
    let line = |op: &str| {
        let out = run(&l, &["show", op, "--receivers", &file]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        let line = text.lines().find(|l| l.starts_with("  contract ")).unwrap();
        line.trim().to_string()
    };
    let stricter = format!("contract     declared by op_types and by {file}; the stricter is used");
    assert_eq!(line("4"), format!("{stricter} (never drilled)"));
    assert_eq!(line("2"), format!("{stricter} (never drilled)"));

    let before = dump(&l);
    for (op, why) in [("4", "not verified idempotent"), ("2", "key expired")] {
        let out = run(
            &l,
            &[
                "decide",
                op,
                "--retry-same-key",
                "--operator",
                "t",
                "--receivers",
                &file,
            ],
        );
        assert_eq!(code(&out), 3, "{op}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{op}: {}", stderr(&out));
    }
    assert_eq!(before, dump(&l), "a refused decision wrote something");
    // Without the file, the row alone allows what the file forbade.
    let out = run(&l, &["decide", "2", "--retry-same-key", "--operator", "t"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_wrong_declaration_names_the_file_the_op_type_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let l = demo_ledger(dir.path());
    for (text, field) in [
        (
            "[receivers.provision_account]\nidempotent = \"yes\"\n",
            "receivers.provision_account.idempotent",
        ),
        (
            "[receivers.provision_account]\nkey_retention_s = -5\n",
            "receivers.provision_account.key_retention_s",
        ),
    ] {
        let file = write(dir.path(), text);
        let out = run(&l, &["show", NO_ROW, "--receivers", &file]);
        assert_ne!(code(&out), 0);
        let err = stderr(&out);
        assert!(err.contains(&format!("{file}:2:")), "{err}");
        assert!(err.contains(field), "{err}");
    }
}
