//! One server of its own that a test may kill as a crash does (`pg_ctl
//! stop -m immediate`: no checkpoint, the next start replays its WAL) and
//! start again on the same data, for the faults an operator meets. Started
//! from the same server binaries as [`super::testing`]'s clusters; stopped
//! and removed when the process ends.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};

use super::testing::{
    connect, initdb, make_dir, run, running_as_root, server_bindir, server_tool, skip,
    spawn_watchdog, tally,
};

/// A server on its own socket folder, durable (fsync and synchronous
/// commit on), so what it acknowledged is what a restart finds.
pub struct CrashServer {
    pub dir: PathBuf,
    bin: PathBuf,
    as_root: bool,
    _watchdog: ChildStdin,
}

/// [`CrashServer`] with a database `ledger`; None, loudly, without server
/// binaries.
pub fn crash_server(name_hint: &str) -> Option<CrashServer> {
    let Some(bin) = server_bindir() else {
        skip(name_hint);
        return None;
    };
    tally(name_hint, None);
    let server = CrashServer::start(bin)
        .unwrap_or_else(|e| panic!("the crash test's server did not start: {e}"));
    server
        .client("postgres")
        .batch_execute("CREATE DATABASE ledger")
        .unwrap();
    Some(server)
}

impl CrashServer {
    fn start(bin: PathBuf) -> Result<CrashServer, String> {
        let as_root = running_as_root();
        let dir = make_dir()?;
        if as_root {
            run(Command::new("chown").arg("postgres").arg(&dir))?;
        }
        let watchdog = spawn_watchdog(&dir, server_tool(&bin, as_root, "pg_ctl"))?;
        initdb(server_tool(&bin, as_root, "initdb"), &dir, None, as_root)?;
        let server = CrashServer {
            dir,
            bin,
            as_root,
            _watchdog: watchdog,
        };
        server.start_again()?;
        Ok(server)
    }

    fn pg_ctl(&self) -> Command {
        let mut c = server_tool(&self.bin, self.as_root, "pg_ctl");
        c.arg("-D").arg(self.dir.join("data"));
        c
    }

    /// Starts the server on its data, replaying its WAL after a kill;
    /// returns once it accepts connections.
    pub fn start_again(&self) -> Result<(), String> {
        run(self
            .pg_ctl()
            .arg("-o")
            .arg(format!(
                "-k {} -c listen_addresses='' -c fsync=on -c synchronous_commit=on",
                self.dir.display()
            ))
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "start"]))
    }

    /// The server gone at once, as a crash leaves it.
    pub fn kill(&self) {
        run(self.pg_ctl().args(["-m", "immediate", "stop"]))
            .unwrap_or_else(|e| panic!("killing the server: {e}"));
    }

    /// The address of `db`, as settle takes it.
    pub fn address(&self, db: &str) -> String {
        format!("postgresql://postgres@/{db}?host={}", self.dir.display())
    }

    /// A plain client on `db`.
    pub fn client(&self, db: &str) -> ::postgres::Client {
        connect(Path::new(&format!(
            "host={} user=postgres dbname={db}",
            self.dir.display()
        )))
    }

    /// `n` `unknown` operations (`k-1` ... `k-n`) in `db`'s ledger, as a
    /// service writes them.
    pub fn write_unknown_ops(&self, db: &str, n: i64) {
        self.client(db)
            .batch_execute(&format!(
                "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                     max_attempts, created_at, updated_at)
                 SELECT 'acme', 'pay', 'k-' || i, 'sha256:00', 'unknown', 3, now(), now()
                 FROM generate_series(1, {n}) i"
            ))
            .unwrap_or_else(|e| panic!("writing {n} operations: {e}"));
    }
}
