//! `settle decide @GROUP --filter Q --expect-count N` through the real
//! binary on three SQLite ledgers services wrote with plain SQL, checked
//! with SQL afterwards: the operator's number is the group's total, a
//! wrong one writes nothing anywhere and says each ledger's count; the
//! right one writes each ledger's matching queue rows in that ledger,
//! each with its own audit chain; a read-only member's part is refused
//! while the others' are written; a member that cannot be counted stops
//! it all before anything is written.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::kit::*;

struct Incident {
    dir: tempfile::TempDir,
    pay: PathBuf,
    ship: PathBuf,
    bill: PathBuf,
}

impl Incident {
    /// pay: 300 queue rows (1..=300), 250 of them `charge` (more than a
    /// batch), 50 `refund`; ship: 20 `charge` rows (1000..=1019); bill
    /// (named read-only): 5 `charge` rows (1..=5). Groups: `both` (pay,
    /// ship), `all` (pay, ship, bill), `broken` (pay and a file that is
    /// not a database).
    fn new() -> Incident {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let (pay, ship, bill) = (path("pay.db"), path("ship.db"), path("bill.db"));
        for (ledger, from, n) in [(&pay, 1, 300), (&ship, 1000, 20), (&bill, 1, 5)] {
            sql(ledger).execute_batch(SERVICE_SCHEMA).unwrap();
            write_failed_ops(ledger, from, n);
            let out = settle(&["adopt", ledger.to_str().unwrap()]);
            assert_eq!(code(&out), 0, "{}", stderr(&out));
        }
        sql(&pay)
            .execute_batch("UPDATE operations SET op_type = 'refund' WHERE id > 250")
            .unwrap();
        std::fs::write(path("junk.db"), "not a database, a note someone left").unwrap();
        let address = |p: &Path| format!("{:?}", p.display().to_string());
        let toml = format!(
            "[ledgers.pay]\naddress = {}\n[ledgers.ship]\naddress = {}\n\
             [ledgers.bill]\naddress = {}\nread_only = true\n\
             [ledgers.junk]\naddress = {}\n\
             [groups.both]\nledgers = [\"pay\", \"ship\"]\n\
             [groups.all]\nledgers = [\"pay\", \"ship\", \"bill\"]\n\
             [groups.broken]\nledgers = [\"pay\", \"junk\"]\n",
            address(&pay),
            address(&ship),
            address(&bill),
            address(&path("junk.db")),
        );
        std::fs::create_dir_all(path("config/settle")).unwrap();
        std::fs::write(path("config/settle/config.toml"), toml).unwrap();
        Incident {
            dir,
            pay,
            ship,
            bill,
        }
    }

    /// `decide GROUP --filter type:charge --not-applied ...` and `extra`.
    fn decide(&self, group: &str, extra: &[&str]) -> Output {
        bin()
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .args(["decide", group, "--filter", "type:charge", "--not-applied"])
            .args(["--evidence", "INC-12: the provider lost the batch"])
            .args(["--operator", "ann"])
            .args(extra)
            .output()
            .unwrap()
    }

    fn dumps(&self) -> [String; 3] {
        [dump(&self.pay), dump(&self.ship), dump(&self.bill)]
    }
}

fn not_applied(ledger: &Path) -> i64 {
    query_i64(
        ledger,
        "SELECT count(*) FROM operations WHERE state = 'not_applied'",
    )
}

#[test]
fn a_wrong_total_writes_nothing_anywhere_and_says_each_ledgers_count() {
    let incident = Incident::new();
    let before = incident.dumps();
    for extra in [&["--expect-count", "250"][..], &[]] {
        let out = incident.decide("@both", extra);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains("270 rows of the triage queue match"), "{e}");
        assert!(e.contains("in each ledger: pay 250, ship 20"), "{e}");
        assert!(e.contains("--expect-count 270"), "{e}");
    }
    assert_eq!(before, incident.dumps(), "a refused count wrote something");
    // A dry run says the same per ledger and writes nothing either.
    let out = incident.decide("@both", &["--dry-run", "--expect-count", "250"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(
            "dry run: 270 rows match in 2 ledgers (pay 250, ship 20); 270 would be written"
        ),
        "{}",
        stdout(&out)
    );
    let e = stderr(&out);
    assert!(
        e.contains("settle: in pay:") && e.contains("settle: in ship:"),
        "{e}"
    );
    assert!(
        e.contains("--expect-count 250 would be refused: 270 rows match"),
        "{e}"
    );
    assert_eq!(before, incident.dumps(), "a dry run wrote something");
}

#[test]
fn the_right_total_writes_each_ledgers_rows_in_that_ledger() {
    let incident = Incident::new();
    let out = incident.decide("@both", &["--expect-count", "270"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("pay: written 250, refused 0, conflicted 0 (of 250 listed)"),
        "{said}"
    );
    assert!(
        said.contains("ship: written 20, refused 0, conflicted 0 (of 20 listed)"),
        "{said}"
    );
    assert!(
        said.contains("in all: written 270, refused 0, conflicted 0 (of 270 listed in 2 ledgers)"),
        "{said}"
    );
    assert_eq!(not_applied(&incident.pay), 250);
    assert_eq!(not_applied(&incident.ship), 20);
    // The refunds did not match and stay in the queue.
    assert_eq!(state(&incident.pay, 251), "unknown");
    assert_eq!(
        query_i64(
            &incident.pay,
            "SELECT count(*) FROM decisions WHERE operator = 'ann' AND decision = 'not_applied'"
        ),
        250
    );
    crate::kit::jobqueue::audit_holds(&incident.pay, 250);
    crate::kit::jobqueue::audit_holds(&incident.ship, 20);
    // Nothing matches any more: the count says so and nothing is written.
    let out = incident.decide("@both", &["--expect-count", "0"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("pay: nothing matches"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_read_only_members_part_is_refused_and_the_others_are_written() {
    let incident = Incident::new();
    let bill = dump(&incident.bill);
    let out = incident.decide("@all", &["--expect-count", "275"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("bill: 5 refused: @bill is read-only"),
        "{said}"
    );
    assert!(
        said.contains("in all: written 270, refused 5, conflicted 0 (of 275 listed in 3 ledgers)"),
        "{said}"
    );
    assert!(
        stderr(&out).contains("nothing of it will be written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(not_applied(&incident.pay), 250);
    assert_eq!(not_applied(&incident.ship), 20);
    assert_eq!(
        bill,
        dump(&incident.bill),
        "the read-only ledger was written"
    );
}

#[test]
fn a_member_that_cannot_be_counted_stops_it_all_naming_it() {
    let incident = Incident::new();
    let before = incident.dumps();
    let out = incident.decide("@broken", &["--expect-count", "250"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("settle: junk: "), "{e}");
    assert!(
        e.contains("1 of 2 ledgers could not be counted: junk"),
        "{e}"
    );
    assert!(e.contains("nothing written in any ledger"), "{e}");
    assert_eq!(
        before,
        incident.dumps(),
        "a group that could not be counted wrote"
    );
}
