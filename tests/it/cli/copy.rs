//! `settle copy` between SQLite files through the real binary: every row
//! arrives as it left, the audit trail verifies with the same head, and a
//! destination that holds operations is refused with nothing written.

use crate::kit::*;

#[test]
fn a_copy_holds_every_row_and_the_same_chain_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let source = demo_ledger(dir.path());
    let copy = dir.path().join("copy.db");
    let out = settle(&["copy", source.to_str().unwrap(), copy.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let operations = query_i64(&source, "SELECT count(*) FROM operations");
    let copied = stdout(&out);
    let line = copied
        .lines()
        .find(|l| l.starts_with("operations"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().nth(1),
        Some(operations.to_string().as_str())
    );
    assert!(stdout(&out).contains("audit trail intact on the copy: 1 decisions"));
    assert_eq!(dump(&copy), dump(&source));
    // The copy opens ready: its read model was built in bulk by the
    // command, up to the last operation, not left to catch up.
    assert!(
        stderr(&out).contains("settle: building the read model: copying operations"),
        "{}",
        stderr(&out)
    );
    let mut model = copy.clone().into_os_string();
    model.push("-settle");
    let marks = rusqlite::Connection::open(&model)
        .unwrap()
        .query_row("SELECT complete, ops FROM settle_marks", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .unwrap();
    let last = query_i64(&source, "SELECT max(id) FROM operations");
    assert_eq!(marks, (1, last));
    let verify = |l: &std::path::Path| stdout(&settle(&["audit", l.to_str().unwrap(), "--verify"]));
    assert_eq!(verify(&copy), verify(&source));

    let before = dump(&copy);
    let again = settle(&["copy", source.to_str().unwrap(), copy.to_str().unwrap()]);
    assert_eq!(code(&again), 1);
    assert!(
        stderr(&again).contains("is not empty: it holds operations"),
        "{}",
        stderr(&again)
    );
    assert_eq!(dump(&copy), before);
}
