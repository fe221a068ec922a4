//! Graphile Worker's own Node library, installed by `scripts/test` under
//! `target/node-graphile` from `tests/fixtures/jobqueue/graphile/`'s lock
//! file, driven by the fixture script there against a throwaway cluster's
//! database. A test without it skips loudly, or fails with
//! SETTLE_REQUIRE_PG=1 (which `scripts/test` sets once it installed it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::py::Running;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/jobqueue/graphile/graphile.js"
);

/// Where Graphile Worker is installed, and the database to run it on.
pub struct Graphile {
    modules: PathBuf,
    /// The database's libpq settings (`PGHOST`, `PGUSER`, `PGDATABASE`).
    env: Vec<(String, String)>,
}

impl Graphile {
    /// Graphile Worker for `db` (a throwaway cluster's `host=DIR user=U
    /// dbname=N` address). None, said on stderr, when it is not installed;
    /// a panic instead with SETTLE_REQUIRE_PG=1.
    pub fn new(db: &Path) -> Option<Graphile> {
        let modules =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/node-graphile/node_modules");
        let there = modules.join("graphile-worker/package.json").is_file()
            && Command::new("node")
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if !there {
            let why = format!(
                "no node with graphile-worker in {}: run scripts/test --install-only",
                modules.display()
            );
            super::pg::tally("graphile-worker", Some(&why));
            if std::env::var("SETTLE_REQUIRE_PG").is_ok_and(|v| v == "1") {
                panic!("SETTLE_REQUIRE_PG=1 but {why}");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED ({why})");
            return None;
        }
        let env = db
            .to_string_lossy()
            .split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .filter_map(|(k, v)| {
                let var = match k {
                    "host" => "PGHOST",
                    "user" => "PGUSER",
                    "dbname" => "PGDATABASE",
                    "port" => "PGPORT",
                    _ => return None,
                };
                Some((var.to_string(), v.to_string()))
            })
            .collect();
        Some(Graphile { modules, env })
    }

    /// The fixture script with `args`; it ends when its stdin closes.
    fn command(&self, args: &[&str], charge_fails: bool) -> Command {
        let mut cmd = Command::new("node");
        cmd.arg(SCRIPT)
            .args(args)
            .stdin(Stdio::piped())
            .env("NODE_PATH", &self.modules)
            .env("SETTLE_CHARGE_FAILS", if charge_fails { "1" } else { "0" })
            .env_remove("PGSERVICE")
            .env_remove("PGPASSWORD")
            .env_remove("DATABASE_URL");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs the script to the end (`migrate`, `add …`, `once`), the
    /// `charge` task failing where `charge_fails`; panics with its output
    /// unless it succeeded.
    pub fn run(&self, args: &[&str], charge_fails: bool) -> Output {
        let mut child = self
            .command(args, charge_fails)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _stdin = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "graphile.js {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts Graphile's worker and waits until its `hang` task holds a
    /// job: that job's id, and the worker (killed when dropped).
    pub fn worker_holding_a_job(&self) -> (i64, Running) {
        let mut child = self
            .command(&["run"], false)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let running = Running(child);
        let line = BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
            .find(|l| l.starts_with("locked "))
            .expect("the worker said which job it locked");
        (line["locked ".len()..].parse().unwrap(), running)
    }
}
