//! One bad cell never hides the rest: a ledger a careless service wrote with
//! plain SQL, holding one malformed cell of each kind, still lists every row
//! in every format, shows the bad row flagged with its column, and refuses a
//! decision on a row whose identity is malformed.

use crate::kit::*;
use std::path::Path;

/// The service's table without NOT NULL or types enforced, as a careless
/// service may have created it; rows 1 and 3 are sound, row 2 gets `bad`.
fn ledger_with(path: &Path, column: &str, value: &str) {
    let conn = sql(path);
    conn.execute_batch(
        "CREATE TABLE operations (id INTEGER PRIMARY KEY, account TEXT, op_type TEXT,
           idem_key TEXT, fingerprint TEXT, params TEXT, state TEXT, result_id TEXT,
           max_attempts INTEGER, deadline_at TEXT, lease_expires_at TEXT, key_expires_at TEXT,
           created_at TEXT, updated_at TEXT, version INTEGER DEFAULT 0);
         CREATE TABLE attempts (op_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
           started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL, error TEXT,
           response TEXT, PRIMARY KEY (op_id, attempt));
         CREATE TABLE events (id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, attempt INTEGER,
           at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT);",
    )
    .unwrap();
    for id in 1..=3 {
        conn.execute(
            "INSERT INTO operations VALUES (?1, 'acme', 'create_report', 'k-' || ?1, 'fp', NULL,
               'unknown', NULL, 3, NULL, NULL, NULL, '2026-11-06T10:15:00Z',
               '2026-11-06T10:16:00Z', 1)",
            [id],
        )
        .unwrap();
    }
    conn.execute(
        &format!("UPDATE operations SET {column} = {value} WHERE id = 2"),
        [],
    )
    .unwrap();
}

/// (column, SQL value, what `found` says, identity column?)
const BAD_CELLS: &[(&str, &str, &str, bool)] = &[
    ("account", "CAST(X'61ff62' AS TEXT)", "invalid UTF-8", true),
    ("account", "NULL", "NULL", true),
    ("op_type", "X'0102'", "a 2-byte BLOB", true),
    ("idem_key", "CAST(X'ff' AS TEXT)", "invalid UTF-8", true),
    ("version", "'three'", "text \"three\"", true),
    ("version", "NULL", "NULL", true),
    ("state", "X'00'", "a 1-byte BLOB", true),
    ("max_attempts", "'lots'", "text \"lots\"", false),
    ("created_at", "NULL", "NULL", false),
    ("updated_at", "X'ffff'", "a 2-byte BLOB", false),
    ("fingerprint", "NULL", "NULL", false),
];

#[test]
fn each_kind_of_bad_cell_is_flagged_and_every_other_row_listed() {
    for (column, value, found, identity) in BAD_CELLS {
        let case = format!("{column} = {value}");
        let dir = tempfile::tempdir().unwrap();
        let l = dir.path().join("careless.db");
        ledger_with(&l, column, value);
        let ls = l.to_str().unwrap();

        for format in ["table", "json", "jsonl", "csv"] {
            let out = settle(&["list", ls, "--format", format]);
            assert_eq!(code(&out), 0, "{case} {format}: {}", stderr(&out));
            let text = stdout(&out);
            for key in ["k-1", "k-3"] {
                assert!(text.contains(key), "{case} {format}: {text}");
            }
            // Row 2 is there too, flagged where the list shows the column.
            // (A list row carries no fingerprint.)
            let row2 = text
                .lines()
                .find(|l| l.contains("k-2") || l.contains('\u{FFFD}'));
            if *column != "fingerprint" {
                let row2 = row2.unwrap_or_else(|| panic!("{case} {format}: {text}"));
                // Each format quotes differently; the words are the same.
                let bare = |t: &str| t.replace(['"', '\\'], "");
                let flag = match format {
                    "json" | "jsonl" => format!("column:{column},found:{found}"),
                    _ => format!("{column}: {found}"),
                };
                assert!(bare(row2).contains(&bare(&flag)), "{case} {format}: {row2}");
            }
        }
        let out = settle(&["list", ls, "--format", "json"]);
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 3, "{case}");

        let out = settle(&["show", ls, "2"]);
        assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("! malformed") && text.contains(&format!("{column}: {found}")),
            "{case}: {text}"
        );

        let before = dump_ops(&l);
        let out = settle(&[
            "decide",
            ls,
            "2",
            "--applied",
            "--evidence",
            "provider lookup",
            "--operator",
            "t",
        ]);
        if *identity {
            assert_eq!(code(&out), 3, "{case}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(&format!("column {column} is malformed")),
                "{case}: {}",
                stderr(&out)
            );
            assert_eq!(before, dump_ops(&l), "{case}: a refusal writes nothing");
        } else {
            assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        }
    }
}

/// Every cell of `operations` as its type and bytes in hex (rusqlite's own
/// `Value` cannot hold invalid UTF-8).
fn dump_ops(path: &Path) -> String {
    let conn = sql(path);
    let columns = "id account op_type idem_key fingerprint params state result_id max_attempts \
                   deadline_at lease_expires_at key_expires_at created_at updated_at version";
    let cells: Vec<String> = columns
        .split_whitespace()
        .map(|c| format!("typeof({c}) || ':' || hex({c})"))
        .collect();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {} FROM operations ORDER BY id",
            cells.join(" || '|' || ")
        ))
        .unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Bad cells in an operation's history: `show` still shows the whole
/// history, each bad cell named with its row and column.
#[test]
fn bad_cells_in_the_history_are_named_by_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("careless.db");
    ledger_with(&l, "params", "NULL");
    sql(&l)
        .execute_batch(
            "INSERT INTO attempts VALUES (2, 1, '2026-11-06T10:15:00Z', NULL, 'timeout',
               X'010203', NULL);
             INSERT INTO attempts VALUES (2, 2, '2026-11-06T10:16:00Z', NULL, 'error',
               'provider said no', NULL);
             INSERT INTO events VALUES (7, 2, 'one', '2026-11-06T10:15:01Z', 'committed',
               CAST(X'7bff7d' AS TEXT));",
        )
        .unwrap();
    let ls = l.to_str().unwrap();
    for format in ["text", "json"] {
        let out = settle(&["show", ls, "2", "--format", format]);
        assert_eq!(code(&out), 0, "{format}: {}", stderr(&out));
        let text = stdout(&out);
        for flag in [
            "attempt 1: error: a 3-byte BLOB",
            "event 7: attempt: text \\\"one\\\"",
            "event 7: detail: invalid UTF-8, shown with U+FFFD",
        ] {
            let flag = if format == "text" {
                flag.replace('\\', "")
            } else {
                flag.to_string()
            };
            assert!(text.contains(&flag), "{format}: {flag}: {text}");
        }
        assert!(text.contains("provider said no"), "{format}: {text}");
    }
}
