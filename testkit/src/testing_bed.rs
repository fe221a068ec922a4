//! A primary with a streaming standby for the failover tests, started
//! from the same server binaries as [`super::testing`]'s clusters. Like it,
//! std and the `postgres` client only: `tests/it/kit/pg.rs` includes this
//! file too.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};

use super::testing::{
    connect, initdb, make_dir, run, running_as_root, server_bindir, server_tool, skip,
    spawn_watchdog, tally,
};

/// A primary and a streaming standby on one machine, each on its own
/// socket folder, replicating synchronously (`synchronous_standby_names =
/// '*'`, set with ALTER SYSTEM as an operator would, so `pg_basebackup -R`
/// copies it to the standby). A fresh pair per call: a test stops and
/// promotes it. Stopped and removed when the process ends.
pub struct Bed {
    pub primary: PathBuf,
    pub standby: PathBuf,
    bin: PathBuf,
    as_root: bool,
    _watchdogs: [ChildStdin; 2],
}

/// [`Bed`]; None, loudly, without server binaries.
pub fn standby_bed(name_hint: &str) -> Option<Bed> {
    let Some(bin) = server_bindir() else {
        skip(name_hint);
        return None;
    };
    tally(name_hint, None);
    Some(Bed::start(bin).unwrap_or_else(|e| panic!("the standby test bed did not start: {e}")))
}

impl Bed {
    fn start(bin: PathBuf) -> Result<Bed, String> {
        let as_root = running_as_root();
        let (primary, standby) = (make_dir()?, make_dir()?);
        if as_root {
            run(Command::new("chown")
                .arg("postgres")
                .arg(&primary)
                .arg(&standby))?;
        }
        let tool = |name: &str| server_tool(&bin, as_root, name);
        let data = |dir: &Path| dir.join("data");
        // The watchdogs first, so a failed start still leaves nothing behind.
        let primary_dog = spawn_watchdog(&primary, tool("pg_ctl"))?;
        let standby_dog = spawn_watchdog(&standby, tool("pg_ctl"))?;
        initdb(tool("initdb"), &primary, None, as_root)?;
        let start = |dir: &Path| {
            run(tool("pg_ctl")
                .arg("-D")
                .arg(data(dir))
                .arg("-o")
                .arg(format!(
                    "-k {} -c listen_addresses='' -c fsync=off",
                    dir.display()
                ))
                .arg("-l")
                .arg(dir.join("log"))
                .args(["-w", "start"]))
        };
        start(&primary)?;
        let bed_client = |dir: &Path| {
            ::postgres::Client::connect(
                &format!("host={} user=postgres dbname=postgres", dir.display()),
                ::postgres::NoTls,
            )
            .map_err(|e| format!("connecting to {}: {e}", dir.display()))
        };
        // ALTER SYSTEM refuses to run in a transaction block: one
        // statement per call.
        let mut admin = bed_client(&primary)?;
        for sql in [
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
            "SELECT pg_reload_conf()",
        ] {
            admin
                .batch_execute(sql)
                .map_err(|e| format!("making replication synchronous: {e}"))?;
        }
        run(tool("pg_basebackup")
            .arg("-D")
            .arg(data(&standby))
            .arg("-h")
            .arg(&primary)
            .args(["-U", "postgres", "-R", "-X", "stream", "-c", "fast"]))?;
        start(&standby)?;
        let bed = Bed {
            primary,
            standby,
            bin,
            as_root,
            _watchdogs: [primary_dog, standby_dog],
        };
        // Synchronous from the first commit: wait until the standby streams.
        let mut admin = bed_client(&bed.primary)?;
        wait_for_streaming(&mut admin)?;
        Ok(bed)
    }

    /// The multi-host address of `db`: the primary first, then the standby.
    pub fn address(&self, db: &str) -> String {
        format!(
            "postgresql://postgres@/{db}?host={},{}&port=5432,5432",
            self.primary.display(),
            self.standby.display()
        )
    }

    /// A plain client on `db` at the server in socket folder `dir`.
    pub fn client(&self, dir: &Path, db: &str) -> ::postgres::Client {
        connect(Path::new(&format!(
            "host={} user=postgres dbname={db}",
            dir.display()
        )))
    }

    /// A new database on the primary, once the standby has replayed it
    /// (a synchronous commit waits for the standby's flush, not its replay).
    pub fn create_database(&self, name: &str) {
        self.client(&self.primary, "postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating {name}: {e}"));
        self.caught_up();
    }

    /// Returns once the standby has replayed all the primary wrote so far:
    /// what a test wrote on the primary is then there to read.
    pub fn caught_up(&self) {
        let lsn: String = self
            .client(&self.primary, "postgres")
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .unwrap()
            .get(0);
        self.replayed("pg_last_wal_replay_lsn() >= $1::text::pg_lsn", &lsn);
    }

    /// Waits (10 s at most) until the standby says `condition` of `lsn`.
    fn replayed(&self, condition: &str, lsn: &str) {
        let mut standby = self.client(&self.standby, "postgres");
        for _ in 0..500 {
            let row = standby
                .query_one(&format!("SELECT {condition}"), &[&lsn])
                .unwrap();
            if row.get::<_, Option<bool>>(0) == Some(true) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the standby never replayed up to {lsn}");
    }

    /// The primary gone at once, as a crash leaves it; returns once the
    /// standby replayed all it had received.
    pub fn stop_primary(&self) {
        run(server_tool(&self.bin, self.as_root, "pg_ctl")
            .arg("-D")
            .arg(self.primary.join("data"))
            .args(["-m", "immediate", "stop"]))
        .unwrap_or_else(|e| panic!("stopping the primary: {e}"));
        // What the standby received (every acknowledged commit) replayed.
        self.replayed(
            "pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn() OR $1 = ''",
            "",
        );
    }

    /// The standby promoted; its `synchronous_standby_names` (copied from
    /// the old primary) reset, or its commits would wait for a standby
    /// that does not exist.
    pub fn promote(&self) {
        run(server_tool(&self.bin, self.as_root, "pg_ctl")
            .arg("-D")
            .arg(self.standby.join("data"))
            .args(["-w", "promote"]))
        .unwrap_or_else(|e| panic!("promoting the standby: {e}"));
        let mut admin = self.client(&self.standby, "postgres");
        for sql in [
            "ALTER SYSTEM RESET synchronous_standby_names",
            "SELECT pg_reload_conf()",
        ] {
            admin
                .batch_execute(sql)
                .unwrap_or_else(|e| panic!("resetting synchronous_standby_names: {e}"));
        }
    }
}

/// Until the primary sees a standby streaming (10 s at most).
fn wait_for_streaming(admin: &mut ::postgres::Client) -> Result<(), String> {
    for _ in 0..200 {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
                &[],
            )
            .map_err(|e| e.to_string())?;
        if row.get::<_, i64>(0) > 0 {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err("the standby never started streaming".into())
}
