//! A throwaway PostgreSQL cluster for tests: one per test process, started
//! from the server binaries installed on the machine (`initdb` + `pg_ctl` on
//! a Unix socket in a temp dir, no TCP, fsync off), stopped and removed when
//! the process ends. Hands out a fresh database per call. Test-only, std and
//! the `postgres` client only, so `tests/it/kit/pg.rs` includes this same
//! file; it must never be compiled into the binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a test says when it cannot run: loud, on the real stderr (libtest
/// captures `eprintln!` of passing tests, so it would hide a skip).
pub const SKIPPED: &str = "SKIPPED (no PostgreSQL server binaries: install the postgresql package)";

/// Set (CI sets it) to fail a PostgreSQL test instead of skipping it when
/// the server binaries are missing.
pub const REQUIRE_ENV: &str = "SETTLE_REQUIRE_PG";

/// A new, empty database on this process's throwaway cluster, as a LEDGER
/// address (`host=DIR user=postgres dbname=NAME`). None when the machine has
/// no PostgreSQL server binaries: then a line saying so went to stderr, and
/// with `SETTLE_REQUIRE_PG=1` this panics instead. A cluster that is there
/// but fails to start always panics: that is a broken machine, not a skip.
pub fn fresh_database(name_hint: &str) -> Option<PathBuf> {
    let cluster = match CLUSTER.get_or_init(Cluster::start) {
        Ok(Some(c)) => c,
        Ok(None) => {
            skip(name_hint);
            return None;
        }
        Err(problem) => panic!("the throwaway PostgreSQL cluster did not start: {problem}"),
    };
    Some(cluster.create_database(name_hint))
}

/// A plain client on `db` (an address from [`fresh_database`]), for writing
/// rows the way a service would and reading them back.
pub fn connect(db: &Path) -> ::postgres::Client {
    ::postgres::Client::connect(&db.to_string_lossy(), ::postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to {}: {e}", db.display()))
}

pub fn skip(name_hint: &str) {
    // The same words as the line on stderr below.
    tally(name_hint, Some(&format!("{SKIPPED}: {name_hint}")));
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!(
            "{REQUIRE_ENV}=1 but this machine has no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package"
        );
    }
    static SKIPS: AtomicUsize = AtomicUsize::new(0);
    let n = SKIPS.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = writeln!(
        std::io::stderr(),
        "{SKIPPED}: {name_hint} (PostgreSQL test #{n} skipped in this test binary; {REQUIRE_ENV}=1 fails instead)"
    );
}

/// A file each PostgreSQL test adds a line to, `ran BINARY TEST` or
/// `skipped BINARY TEST: why`, when set: `scripts/test` counts them.
pub const TALLY_ENV: &str = "SETTLE_PG_TALLY";

/// This test's line in [`TALLY_ENV`]'s file: ran, or skipped and why. The
/// test is its thread's name (libtest names each test's thread), else the
/// hint; one append per line, so processes and threads do not interleave.
pub fn tally(name_hint: &str, skipped: Option<&str>) {
    let Some(path) = std::env::var_os(TALLY_ENV) else {
        return;
    };
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => name.to_string(),
        _ => format!("({name_hint})"),
    };
    let line = match skipped {
        None => format!("ran {binary} {test}\n"),
        Some(why) => format!("skipped {binary} {test}: {why}\n"),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

static CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();
static DURABLE_CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();
static TLS_CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();
static PASSWORD_CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();

/// A fresh database on a cluster that flushes every commit to disk (fsync,
/// synchronous commit and full page writes on, as a service's server
/// runs), for benchmarks of a service's write path: on the tests' cluster
/// a commit never waits for the disk. Settings given on the server's
/// command line outrank `ALTER SYSTEM`, so this is a cluster of its own.
pub fn durable_database(name_hint: &str) -> Option<PathBuf> {
    let cluster = match DURABLE_CLUSTER.get_or_init(|| {
        Cluster::start_opts(Opts {
            durable: true,
            ..Opts::default()
        })
    }) {
        Ok(Some(c)) => c,
        Ok(None) => {
            skip(name_hint);
            return None;
        }
        Err(problem) => panic!("the throwaway durable cluster did not start: {problem}"),
    };
    Some(cluster.create_database(name_hint))
}

/// The superuser's password on [`password_database`]'s cluster.
pub const PASSWORD: &str = "s3cret:with\\colon";

/// A fresh database on a cluster that asks every client for a password
/// (SCRAM, on its socket as over TCP): for `.pgpass` and service files.
/// Returns its socket folder and the database's name; the address is the
/// caller's to write, without the password. None, loudly, without server
/// binaries.
pub fn password_database(name_hint: &str) -> Option<(PathBuf, String)> {
    let cluster = match PASSWORD_CLUSTER.get_or_init(|| {
        Cluster::start_opts(Opts {
            password: Some(PASSWORD),
            ..Opts::default()
        })
    }) {
        Ok(Some(c)) => c,
        Ok(None) => {
            skip(name_hint);
            return None;
        }
        Err(problem) => panic!("the throwaway password cluster did not start: {problem}"),
    };
    let db = cluster.create_database(name_hint);
    let name = db.to_string_lossy().rsplit("dbname=").next()?.to_string();
    Some((cluster.dir.clone(), name))
}

/// How a throwaway cluster is set up.
#[derive(Default, Clone, Copy)]
struct Opts {
    /// Also on 127.0.0.1 with TLS.
    tls: bool,
    /// The superuser's password; every connection must give it.
    password: Option<&'static str>,
    /// Every commit flushed to disk.
    durable: bool,
}

/// A server that speaks TLS, for the tests of `sslmode`: a second throwaway
/// cluster listening on 127.0.0.1 (TLS needs TCP; the first one has no TCP
/// at all) with a self-signed certificate for `127.0.0.1` made by the
/// `openssl` tool. Returns a `key=value` address of a fresh database
/// without `sslmode`, and the certificate (PEM) to trust. None, loudly, when
/// the server binaries or `openssl` are missing.
pub fn tls_database(name_hint: &str) -> Option<(String, PathBuf)> {
    if find_on_path("openssl").is_none() {
        skip(&format!(
            "{name_hint} (no openssl tool to make a certificate)"
        ));
        return None;
    }
    let cluster = match TLS_CLUSTER.get_or_init(|| Cluster::start_with(true)) {
        Ok(Some(c)) => c,
        Ok(None) => {
            skip(name_hint);
            return None;
        }
        Err(problem) => panic!("the throwaway TLS cluster did not start: {problem}"),
    };
    let db = cluster.create_database(name_hint);
    let name = db.to_string_lossy().rsplit("dbname=").next()?.to_string();
    let port = cluster.port?;
    Some((
        format!("host=127.0.0.1 port={port} user=postgres dbname={name}"),
        cluster.dir.join("data").join("server.crt"),
    ))
}

struct Cluster {
    /// The socket directory; the data directory is `dir/data`.
    dir: PathBuf,
    /// The watchdog's stdin: it closes when this process ends, however it
    /// ends, and the watchdog then stops the server and removes `dir`.
    _watchdog: ChildStdin,
    /// Serialises CREATE DATABASE (concurrent ones contend for template1).
    admin: Mutex<::postgres::Client>,
    next: AtomicUsize,
    /// The TCP port of a TLS cluster (None: socket only).
    port: Option<u16>,
}

/// Runs one of the server's tools as the server's user (root may not).
pub fn server_tool(bin: &Path, as_root: bool, tool: &str) -> Command {
    let mut cmd = if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(tool));
        c
    } else {
        Command::new(bin.join(tool))
    };
    cmd.stdin(Stdio::null());
    cmd
}

impl Cluster {
    /// Ok(None) when there are no server binaries.
    fn start() -> Result<Option<Cluster>, String> {
        Cluster::start_with(false)
    }

    /// [`Cluster::start`], with `tls`: also on 127.0.0.1 at a free port,
    /// with `ssl = on` and a self-signed certificate.
    fn start_with(tls: bool) -> Result<Option<Cluster>, String> {
        Cluster::start_opts(Opts {
            tls,
            ..Opts::default()
        })
    }

    fn start_opts(opts: Opts) -> Result<Option<Cluster>, String> {
        let tls = opts.tls;
        let Some(bin) = server_bindir() else {
            return Ok(None);
        };
        let as_root = running_as_root();
        let dir = make_dir()?;
        if as_root {
            run(Command::new("chown").arg("postgres").arg(&dir))?;
        }
        let data = dir.join("data");
        let as_server = |tool: &str| server_tool(&bin, as_root, tool);
        initdb(as_server("initdb"), &dir, opts.password, as_root)?;
        let flush = if opts.durable { "on" } else { "off" };
        let mut options = format!(
            "-k {} -c fsync={flush} -c synchronous_commit={flush} \
             -c full_page_writes={flush} -c max_connections=200",
            dir.display()
        );
        let port = if tls {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("finding a free port: {e}"))?
                .port();
            make_certificate(&data, as_root)?;
            options += &format!(" -c listen_addresses=127.0.0.1 -c port={port} -c ssl=on");
            Some(port)
        } else {
            options += " -c listen_addresses=''";
            None
        };
        // The watchdog first, so a failed start still leaves nothing behind.
        let watchdog = spawn_watchdog(&dir, as_server("pg_ctl"))?;
        run(as_server("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-o")
            .arg(options)
            .arg("-l")
            .arg(dir.join("log"))
            .args(["-w", "start"]))
        .map_err(|e| {
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            format!("{e}\nserver log:\n{log}")
        })?;
        // The socket's name carries the port: a TLS cluster's is not 5432.
        let at_port = port.map(|p| format!(" port={p}")).unwrap_or_default();
        let mut config: ::postgres::Config = format!(
            "host={}{at_port} user=postgres dbname=postgres",
            dir.display()
        )
        .parse()
        .map_err(|e| format!("{e}"))?;
        if let Some(password) = opts.password {
            config.password(password);
        }
        let admin = config
            .connect(::postgres::NoTls)
            .map_err(|e| format!("connecting to the throwaway cluster: {e}"))?;
        Ok(Some(Cluster {
            dir,
            _watchdog: watchdog,
            admin: Mutex::new(admin),
            next: AtomicUsize::new(0),
            port,
        }))
    }

    fn create_database(&self, name_hint: &str) -> PathBuf {
        tally(name_hint, None);
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let mut name: String = name_hint
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9') => c,
                _ => '_',
            })
            .take(50)
            .collect();
        name = format!("t{n}_{name}");
        let mut admin = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating test database {name}: {e}"));
        PathBuf::from(format!(
            "host={} user=postgres dbname={name}",
            self.dir.display()
        ))
    }
}

/// `initdb` of `dir/data`: every local connection trusted, or with
/// `password`, every one asked for it (SCRAM).
pub fn initdb(
    mut initdb: Command,
    dir: &Path,
    password: Option<&str>,
    as_root: bool,
) -> Result<(), String> {
    initdb.arg("-D").arg(dir.join("data"));
    match password {
        Some(password) => {
            let file = dir.join("pwfile");
            std::fs::write(&file, password).map_err(|e| format!("writing the password: {e}"))?;
            if as_root {
                run(Command::new("chown").arg("postgres").arg(&file))?;
            }
            initdb.args(["-A", "scram-sha-256", "--pwfile"]).arg(&file);
        }
        None => {
            initdb.args(["-A", "trust"]);
        }
    }
    run(initdb
        .args(["-U", "postgres", "--no-sync", "-E", "UTF8"])
        .args(["--locale", "C"]))
}

/// A self-signed certificate for 127.0.0.1 in the data directory, owned by
/// the server's user, as `ssl = on` expects (server.crt, server.key).
fn make_certificate(data: &Path, as_root: bool) -> Result<(), String> {
    let (crt, key) = (data.join("server.crt"), data.join("server.key"));
    run(Command::new("openssl")
        .args([
            "req", "-new", "-x509", "-days", "2", "-nodes", "-newkey", "rsa:2048",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt))?;
    run(Command::new("chmod").arg("600").arg(&key))?;
    if as_root {
        run(Command::new("chown").arg("postgres").arg(&key).arg(&crt))?;
    }
    Ok(())
}

/// Starts a process in its own session (Ctrl-C on the tests does not reach
/// it) that waits for its stdin to close, which happens when this process
/// exits, then stops the server at once and removes the directory. Rust
/// tests have no teardown hook; this is the one that always runs.
pub fn spawn_watchdog(dir: &Path, mut pg_ctl: Command) -> Result<ChildStdin, String> {
    let data = dir.join("data");
    pg_ctl
        .arg("-D")
        .arg(&data)
        .args(["-m", "immediate", "stop"]);
    let mut stop = vec![pg_ctl.get_program().to_os_string()];
    stop.extend(pg_ctl.get_args().map(|a| a.to_os_string()));
    let script = r#"cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf "$DIR""#;
    let setsid = find_on_path("setsid");
    let mut cmd = match &setsid {
        Some(s) => {
            let mut c = Command::new(s);
            c.arg("sh");
            c
        }
        None => Command::new("sh"),
    };
    cmd.arg("-c")
        .arg(script)
        .arg("sh")
        .args(stop)
        .env("DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting the cluster's watchdog: {e}"))?;
    child
        .stdin
        .take()
        .ok_or_else(|| "the watchdog has no stdin".to_string())
}

/// Where `initdb` and `pg_ctl` are: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/*/bin`, else `PATH`.
pub fn server_bindir() -> Option<PathBuf> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_server(bin))
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    find_on_path("initdb")
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|d| has_server(d))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// initdb and the server refuse to run as root; `/proc/self` belongs to
/// the process's effective user.
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(m) => m.uid() == 0,
        Err(_) => Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0"),
    }
}

/// A new directory for the socket and data; short, since a Unix socket path
/// must fit in about 100 bytes.
pub fn make_dir() -> Result<PathBuf, String> {
    let base = if Path::new("/tmp").is_dir() {
        PathBuf::from("/tmp")
    } else {
        std::env::temp_dir()
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let dir = base.join(format!("settle-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir)
}

pub fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("running {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{:?} {:?} failed: {}{}",
        cmd.get_program(),
        cmd.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}
