//! The job queues' own Python packages (Procrastinate, River's client), in
//! the virtual environment `scripts/test` makes under `target/py-venv` from
//! `tests/fixtures/jobqueue/requirements.txt`, run against a throwaway
//! cluster's database. A test without them skips loudly, or fails with
//! SETTLE_REQUIRE_PG=1 (which `scripts/test` sets once it installed them).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where the tests' Python packages and their modules are.
pub struct Py {
    venv: PathBuf,
    /// The database's libpq settings (`host`, `user`, `dbname`).
    env: Vec<(String, String)>,
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jobqueue");

impl Py {
    /// The virtual environment, with `modules` importable, for `db` (a
    /// throwaway cluster's `host=DIR user=U dbname=N` address). None, said
    /// on stderr, when it is missing; a panic instead with
    /// SETTLE_REQUIRE_PG=1.
    pub fn new(db: &Path, modules: &str) -> Option<Py> {
        let venv = std::env::var_os("SETTLE_PY_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/py-venv"));
        let importable = Command::new(venv.join("bin/python"))
            .args(["-c", &format!("import {modules}")])
            .env("PYTHONPATH", FIXTURES)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !importable {
            let why = format!(
                "no Python environment at {} that imports {modules}: run scripts/test --install-only",
                venv.display()
            );
            super::pg::tally(modules, Some(&why));
            if std::env::var("SETTLE_REQUIRE_PG").is_ok_and(|v| v == "1") {
                panic!("SETTLE_REQUIRE_PG=1 but {why}");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED ({why})");
            return None;
        }
        let address = db.to_string_lossy();
        let env = address
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
        Some(Py { venv, env })
    }

    /// Python's module `module` (as `python -m`) with `args`, on the
    /// database, the fixtures' modules importable. It ends by itself when
    /// its stdin closes, which is when this test process ends however it
    /// ends, so no engine's worker outlives the cluster it works on.
    fn command(&self, module: &str, args: &[&str]) -> Command {
        const ENDS_WITH_STDIN: &str = "import os, runpy, sys, threading
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)";
        let mut cmd = Command::new(self.venv.join("bin/python"));
        cmd.args(["-c", ENDS_WITH_STDIN, module])
            .args(args)
            .stdin(Stdio::piped())
            .env("PYTHONPATH", FIXTURES)
            .env("PYTHONUNBUFFERED", "1")
            .env_remove("PGSERVICE")
            .env_remove("PGPASSWORD");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `module` to the end; panics with its output unless it succeeded.
    pub fn run(&self, module: &str, args: &[&str]) -> Output {
        let mut child = self
            .command(module, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held open until it ends: closing it tells the module to stop.
        let _stdin = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{module} {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts `module` in the background; it is killed when the guard
    /// drops.
    pub fn spawn(&self, module: &str, args: &[&str]) -> Running {
        let child = self
            .command(module, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Running(child)
    }
}

/// A process the test started, killed (SIGKILL) when dropped.
pub struct Running(pub Child);

impl Running {
    /// Kills it as a crash would: no chance to clean up.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    pub fn still_running(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until `check` holds, up to `limit`; panics saying `what` else.
pub fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let give_up = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < give_up, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
