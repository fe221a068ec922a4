//! One incident, many ledgers, through the real binary: a group of two
//! SQLite ledgers and a PostgreSQL one (the throwaway cluster) read as
//! one: `list` merges their queues in one order, each row naming its
//! ledger; `count` gives each ledger's count and the total; `show
//! NAME:ID` finds the operation in the ledger named, and a bare id is
//! refused with the names of the ledgers holding it.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::kit::backends::TestLedger;
use crate::kit::*;

/// The ledgers of the incident and the config folder that names them.
struct Incident {
    dir: tempfile::TempDir,
    pay: PathBuf,
    ship: PathBuf,
    bill: Option<TestLedger>,
}

impl Incident {
    /// pay (named read-only): 1,500 queue rows (ids 1..=1500, more than one page) and 20
    /// completed ones; ship: queue rows 500..=700, its 600 under its own
    /// account; bill (PostgreSQL): queue rows 1000..=1100.
    fn new() -> Incident {
        let dir = tempfile::tempdir().unwrap();
        let (pay, ship) = (dir.path().join("pay.db"), dir.path().join("ship.db"));
        for (path, from, n) in [(&pay, 1, 1500), (&ship, 500, 201)] {
            sql(path).execute_batch(SERVICE_SCHEMA).unwrap();
            write_failed_ops(path, from, n);
        }
        sql(&pay)
            .execute_batch(
                "UPDATE operations SET state = 'completed', result_id = 'r' WHERE id BETWEEN 1400 AND 1419",
            )
            .unwrap();
        sql(&ship)
            .execute_batch("UPDATE operations SET account = 'ship-acct' WHERE id = 600")
            .unwrap();
        let bill = TestLedger::postgres("several ledgers");
        if let Some(bill) = &bill {
            bill.exec(
                "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, state,
                     max_attempts, created_at, updated_at, version)
                 SELECT i, 'bill-' || (i % 7), 'invoice', 'inv-' || i, 'sha256:00', 'unknown', 3,
                     '2026-11-06T10:00:00Z', '2026-11-06T10:00:00Z', 1
                 FROM generate_series(1000, 1100) AS i;",
            );
        }
        let mut toml = format!(
            "[ledgers.pay]\naddress = {:?}\nread_only = true\n[ledgers.ship]\naddress = {:?}\n",
            pay.display().to_string(),
            ship.display().to_string()
        );
        let mut members = vec!["pay", "ship"];
        if let Some(bill) = &bill {
            toml.push_str(&format!("[ledgers.bill]\naddress = {:?}\n", bill.arg()));
            members.push("bill");
        }
        toml.push_str(&format!("[groups.incident]\nledgers = {members:?}\n"));
        std::fs::create_dir_all(dir.path().join("config/settle")).unwrap();
        std::fs::write(dir.path().join("config/settle/config.toml"), toml).unwrap();
        Incident {
            dir,
            pay,
            ship,
            bill,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        bin()
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .args(args)
            .output()
            .unwrap()
    }

    /// Each ledger's name and its queue's ids, as SQL counts them.
    fn queues(&self) -> Vec<(&'static str, Vec<i64>)> {
        let ids = |path: &Path| -> Vec<i64> {
            let conn = sql(path);
            let mut stmt = conn
                .prepare("SELECT id FROM operations WHERE state = 'unknown' ORDER BY id")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let mut queues = vec![("pay", ids(&self.pay)), ("ship", ids(&self.ship))];
        if let Some(bill) = &self.bill {
            let rows = pg::connect(bill.path())
                .query(
                    "SELECT id FROM operations WHERE state = 'unknown' ORDER BY id",
                    &[],
                )
                .unwrap();
            queues.push(("bill", rows.iter().map(|r| r.get::<_, i64>(0)).collect()));
        }
        queues
    }
}

fn jsonl(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_group_lists_every_ledgers_queue_once_named_in_one_order() {
    let incident = Incident::new();
    let out = incident.run(&["list", "@incident", "--queue", "--all", "--format", "jsonl"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Vec<(String, i64)> = jsonl(&out)
        .iter()
        .map(|v| {
            (
                v["ledger"].as_str().unwrap().to_string(),
                v["id"].as_i64().unwrap(),
            )
        })
        .collect();
    // Newest id first, as one ledger lists; an id two ledgers share comes
    // in the group's order.
    let queues = incident.queues();
    let mut want: Vec<(usize, &str, i64)> = queues
        .iter()
        .enumerate()
        .flat_map(|(i, (name, ids))| ids.iter().map(move |id| (i, *name, *id)))
        .collect();
    want.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let want: Vec<(String, i64)> = want
        .into_iter()
        .map(|(_, n, id)| (n.to_string(), id))
        .collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    let unique: std::collections::HashSet<_> = got.iter().collect();
    assert_eq!(unique.len(), got.len(), "a row was listed twice");
    // Another order merges the same way: accounts ascending, ties by id.
    let out = incident.run(&[
        "list",
        "@incident",
        "--queue",
        "--all",
        "--sort",
        "account:asc",
        "--format",
        "jsonl",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows = jsonl(&out);
    assert_eq!(rows.len(), want.len());
    let keys: Vec<(String, i64)> = rows
        .iter()
        .map(|v| {
            (
                v["account"].as_str().unwrap().to_string(),
                v["id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        keys.windows(2).all(|w| w[0] <= w[1]),
        "not in account order"
    );
}

#[test]
fn count_gives_each_ledger_and_the_total_as_sql_counts_them() {
    let incident = Incident::new();
    let out = incident.run(&["count", "@incident", "--queue"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let queues = incident.queues();
    let mut want = String::new();
    for (name, ids) in &queues {
        want.push_str(&format!("{name:<5}  {:>10}\n", ids.len()));
    }
    let total: usize = queues.iter().map(|(_, ids)| ids.len()).sum();
    want.push_str(&format!("total  {total:>10}\n"));
    assert_eq!(stdout(&out), want);
    assert_eq!(queues[0].1.len(), 1480);
    let out = incident.run(&["count", "@incident", "--queue", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["total"], total);
    assert_eq!(v["ledgers"][1]["ledger"], "ship");
    assert_eq!(v["ledgers"][1]["count"], 201);
    // One ledger: its count alone.
    let out = incident.run(&["count", "@ship"]);
    assert_eq!(stdout(&out), "201\n");
}

#[test]
fn a_ledger_term_picks_the_groups_ledgers_it_names() {
    let incident = Incident::new();
    let queues = incident.queues();
    let out = incident.run(&[
        "list",
        "@incident",
        "--filter",
        "ledger:ship state:unknown",
        "--all",
        "--format",
        "jsonl",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows = jsonl(&out);
    assert_eq!(rows.len(), queues[1].1.len());
    assert!(
        rows.iter().all(|v| v["ledger"] == "ship"),
        "{}",
        stdout(&out)
    );
    let out = incident.run(&["count", "@incident", "--queue", "--filter", "ledger:pay,s*"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let total = queues[0].1.len() + queues[1].1.len();
    assert!(text.contains(&format!("total  {total:>10}")), "{text}");
    assert!(!text.contains("bill"), "{text}");
}

#[test]
fn name_colon_id_shows_that_ledgers_operation_and_a_bare_id_is_refused() {
    let incident = Incident::new();
    let out = incident.run(&["show", "@incident", "ship:600"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("operation 600  ship-acct/charge/k-000600"),
        "{}",
        stdout(&out)
    );
    let out = incident.run(&["show", "@incident", "pay:600"]);
    assert!(
        stdout(&out).contains("acct-000/charge/k-000600"),
        "{}",
        stdout(&out)
    );
    // A NAME:ID error names the ledger.
    let out = incident.run(&["show", "@incident", "ship:9999"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("settle: ship: ") && stderr(&out).contains("9999"),
        "{}",
        stderr(&out)
    );
    let out = incident.run(&["show", "@incident", "600"]);
    assert_eq!(code(&out), 2);
    let e = stderr(&out);
    assert!(
        e.contains("NAME:ID") && e.contains("pay:600, ship:600") && !e.contains("bill:600"),
        "{e}"
    );
    // probe records in one ledger: its OPs are NAME:ID of one of them.
    let out = incident.run(&[
        "probe",
        "@incident",
        "pay:1",
        "ship:600",
        "--operator",
        "op",
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("all of one ledger"),
        "{}",
        stderr(&out)
    );
    // A command that takes one ledger says so of a group.
    let out = incident.run(&["audit", "@incident"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("@incident is a group of ledgers (pay, ship"),
        "{}",
        stderr(&out)
    );
    // Plain paths work too, named by their file's stem.
    let (pay, ship) = (
        incident.pay.to_str().unwrap(),
        incident.ship.to_str().unwrap(),
    );
    let out = incident.run(&["show", pay, ship, "ship:600"]);
    assert!(stdout(&out).contains("ship-acct"), "{}", stdout(&out));
    // decide takes a group's NAME:ID too.
    let out = incident.run(&[
        "decide",
        "@incident",
        "ship:600",
        "--not-applied",
        "--evidence",
        "INC-9: lost",
        "--operator",
        "op",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(state(&incident.ship, 600), "not_applied");
    assert_eq!(state(&incident.pay, 600), "unknown");
    // A group's read-only ledger (pay) refuses the write picked out of it,
    // and only it.
    let out = incident.run(&[
        "decide",
        "@incident",
        "pay:600",
        "--not-applied",
        "--evidence",
        "x",
        "--operator",
        "op",
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("@pay is read-only"),
        "{}",
        stderr(&out)
    );
    assert_eq!(state(&incident.pay, 600), "unknown");
}

#[test]
fn machine_formats_carry_a_ledger_field_and_one_ledger_prints_as_before() {
    let incident = Incident::new();
    let out = incident.run(&[
        "list",
        "@incident",
        "--queue",
        "--limit",
        "3",
        "--format",
        "csv",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ledger,id,state,"), "{text}");
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[1].starts_with("pay,1500,") || lines[1].starts_with("ship,"),
        "{text}"
    );
    let out = incident.run(&[
        "list",
        "@incident",
        "--queue",
        "--limit",
        "2",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["ledger"].is_string()));
    let out = incident.run(&["list", "@incident", "--queue", "--limit", "2"]);
    assert!(stdout(&out).starts_with("LEDGER  "), "{}", stdout(&out));
    // One ledger, by path or by name: no ledger column, the same bytes.
    let pay = incident.pay.to_str().unwrap();
    let by_path = incident.run(&["list", pay, "--queue", "--limit", "3"]);
    let by_name = incident.run(&["list", "@pay", "--queue", "--limit", "3"]);
    assert_eq!(stdout(&by_path), stdout(&by_name));
    assert!(
        stdout(&by_path).starts_with("      ID  STATE"),
        "{}",
        stdout(&by_path)
    );
    let jsonl = incident.run(&["list", pay, "--limit", "1", "--format", "jsonl"]);
    assert!(!stdout(&jsonl).contains("\"ledger\""), "{}", stdout(&jsonl));
}

#[test]
fn a_ledger_that_cannot_be_read_is_named_and_the_others_still_print() {
    let incident = Incident::new();
    let pay = incident.pay.to_str().unwrap();
    let missing = incident.dir.path().join("gone.db");
    let out = incident.run(&[
        "list",
        pay,
        missing.to_str().unwrap(),
        "--queue",
        "--limit",
        "2",
    ]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("settle: gone: "), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 of 2 ledgers could not be read: gone"));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    let out = incident.run(&["count", pay, missing.to_str().unwrap(), "--queue"]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains("total        1480"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_group_named_like_a_ledger_is_an_error_naming_the_file_and_both() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settle/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "[ledgers.a]\naddress = \"a.db\"\n[groups.a]\nledgers = [\"a\"]\n",
    )
    .unwrap();
    let out = bin()
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["list", "@a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    let e = stderr(&out);
    assert!(
        e.contains(file.to_str().unwrap()) && e.contains("groups.a") && e.contains("ledgers.a"),
        "{e}"
    );
}
