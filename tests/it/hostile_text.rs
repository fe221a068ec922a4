//! Property: whatever text a service writes into a ledger with plain SQL, or
//! an operator passes as evidence, note or name, the CLI's text and csv
//! output and its messages carry no control, escape or bidi-override
//! character, so nothing a service wrote can rewrite the operator's
//! terminal. Driven through the real binary on temp ledgers.

use crate::kit::*;
use proptest::prelude::*;
use std::path::Path;

/// What must never be printed: C0 (newline aside, it ends lines), DEL, C1,
/// and the marks and overrides that reorder what a reader sees.
fn forbidden(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Mostly the characters that do harm, with letters between.
fn hostile() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        3 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => proptest::char::range('\u{7f}', '\u{9f}'),
        2 => proptest::sample::select(vec![
            '\u{1b}', '[', ']', ';', ',', '"', '=', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}',
            '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ]),
        1 => any::<char>(),
    ];
    proptest::collection::vec(c, 0..14).prop_map(String::from_iter)
}

/// Text that can travel as a command-line argument: no NUL, and starting
/// with a letter so it is never read as a flag.
fn arg(prefix: &str, s: &str) -> String {
    format!("{prefix}{}", s.replace('\0', ""))
}

/// One `unknown` operation whose every text column is `f[..]`.
fn hostile_ledger(path: &Path, f: &[String; 10]) {
    let conn = sql(path);
    conn.execute_batch(SERVICE_SCHEMA).unwrap();
    conn.execute(
        "INSERT INTO operations VALUES (1, ?1, ?2, ?3, ?4, ?5, 'unknown', ?6, 3, ?7, NULL, ?7,
            '2026-11-06T10:15:00Z', ?7, 1)",
        rusqlite::params![f[0], f[1], f[2], f[3], f[4], f[5], f[6]],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO attempts VALUES (1, 1, ?1, ?1, 'timeout', ?2, ?3)",
        rusqlite::params![f[6], f[7], f[8]],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO events (op_id, attempt, at, event, detail) VALUES (1, 1, ?1, ?2, ?3),
            (1, 1, ?1, 'committed', ?4)",
        rusqlite::params![
            f[6],
            f[9],
            f[8],
            serde_json::json!({ "effect_id": f[5] }).to_string()
        ],
    )
    .unwrap();
}

fn leaks(what: &str, out: &std::process::Output) -> Vec<String> {
    [("stdout", stdout(out)), ("stderr", stderr(out))]
        .into_iter()
        .flat_map(|(stream, text)| {
            text.lines()
                .filter(|line| line.chars().any(forbidden))
                .map(|line| format!("{what} {stream}: {line:?}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn no_ledger_field_puts_a_control_into_cli_output(
        f in proptest::array::uniform10(hostile()),
        typed in proptest::array::uniform4(hostile()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let l = dir.path().join("ledger.db");
        hostile_ledger(&l, &f);
        let ledger = l.to_str().unwrap();
        let (result, evidence, note, operator) = (
            arg("r", &typed[0]),
            arg("e", &typed[1]),
            arg("n", &typed[2]),
            arg("o", &typed[3]),
        );
        let mut found = Vec::new();
        for (what, args) in [
            ("list", vec!["list", ledger]),
            ("list csv", vec!["list", ledger, "--format", "csv"]),
            ("show", vec!["show", ledger, "1"]),
            ("decide", vec![
                "decide", ledger, "1", "--applied", "--result-id", &result,
                "--evidence", &evidence, "--note", &note, "--operator", &operator,
            ]),
            ("show decided", vec!["show", ledger, "1"]),
            ("list decided", vec!["list", ledger, "--all"]),
            ("audit", vec!["audit", ledger]),
            ("audit csv", vec!["audit", ledger, "--format", "csv"]),
            // A refusal quotes the operation back.
            ("refused", vec!["decide", ledger, "1", "--applied", "--evidence", "x", "--operator", "o"]),
        ] {
            let out = settle(&args);
            if what == "decide" {
                // The decision must land, or audit would have nothing to show.
                prop_assert_eq!(code(&out), 0, "{}", stderr(&out));
            }
            found.extend(leaks(what, &out));
        }
        prop_assert!(found.is_empty(), "{:#?}", found);
    }
}
