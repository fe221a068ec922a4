//! Where a PostgreSQL ledger is: a `postgres://` or `postgresql://` URL, or
//! libpq's `key=value` form, with the usual `PG*` environment variables for
//! what it leaves out. Parses and connects; shows it as `user@host:port/db`
//! and never shows the password.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::{Client, Config};

use super::conninfo::{self, Params, get};
use super::hosts::{self, Endpoint, Failed, Role, SessionAttrs};
use super::routing::Reads;
use super::tls::{Tls, TlsWish, Verify};
use super::{pgpass, service_file};
use crate::error::{Error, Fault, Result};

/// How long one host may take to answer when neither the address nor
/// `PGCONNECT_TIMEOUT` says (libpq waits for ever; a console must not).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed PostgreSQL ledger address.
#[derive(Clone)]
pub struct Address {
    /// Everything but the hosts, ports and password, which vary per host.
    base: Config,
    endpoints: Vec<Endpoint>,
    password: Option<String>,
    /// The password file to look in when the address has no password.
    passfile: Option<PathBuf>,
    attrs: SessionAttrs,
    reads: Reads,
    /// Per host, the whole attempt (None: wait for ever, as `0` asks).
    timeout: Option<Duration>,
    shown: String,
    tls: TlsWish,
}

impl std::fmt::Debug for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Whether a LEDGER argument names a PostgreSQL ledger rather than a SQLite
/// file: a URL with the postgres scheme, or libpq's `key=value` form.
pub fn is_address(spec: &Path) -> bool {
    let Some(s) = spec.to_str() else {
        return false;
    };
    let s = s.trim_start();
    s.starts_with("postgres://")
        || s.starts_with("postgresql://")
        || s.split_whitespace().next().is_some_and(|first| {
            first
                .split_once('=')
                .is_some_and(|(key, _)| LIBPQ_KEYS.contains(&key))
        })
}

/// The libpq keywords a `key=value` address may start with.
const LIBPQ_KEYS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "sslmode",
    "application_name",
    "connect_timeout",
    "target_session_attrs",
    "options",
];

/// The environment variables libpq reads for what an address leaves out
/// (after the service file), by keyword.
const FROM_ENV: &[(&str, &str)] = &[
    ("host", "PGHOST"),
    ("hostaddr", "PGHOSTADDR"),
    ("port", "PGPORT"),
    ("dbname", "PGDATABASE"),
    ("user", "PGUSER"),
    ("password", "PGPASSWORD"),
    ("passfile", "PGPASSFILE"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("target_session_attrs", "PGTARGETSESSIONATTRS"),
    ("application_name", "PGAPPNAME"),
    ("options", "PGOPTIONS"),
];

/// The keywords settle applies itself; the rest go to the client library.
const OWN_KEYS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "password",
    "passfile",
    "service",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "target_session_attrs",
    "reads",
];

impl Address {
    /// Parses `spec` as libpq does: the address's keywords, then a
    /// service's (`service=NAME` or `PGSERVICE`), then the `PG*`
    /// environment variables for what both leave out.
    pub fn parse(spec: &Path) -> Result<Address> {
        Address::parse_with(spec, &|name| std::env::var(name).ok())
    }

    /// [`Address::parse`] with `env` standing for the environment.
    pub(super) fn parse_with(spec: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Address> {
        let raw = spec.to_str().unwrap_or_default();
        let usage = |why: &str| {
            Error::Usage(format!(
                "{}: not a PostgreSQL address: {}\n  what to do: write postgres://USER@HOST:PORT/DB or host=… dbname=…",
                redact(raw),
                crate::text::sanitize(why)
            ))
        };
        let params = with_defaults(conninfo::parse(raw).map_err(|e| usage(&e))?, env)?;
        let (tls, lib_mode) = tls_wish(&params);
        let mut rest: Params = Vec::new();
        for (key, value) in &params {
            if !OWN_KEYS.contains(&key.as_str()) && get(&params, key) == Some(value.as_str()) {
                rest.retain(|(k, _)| k != key);
                rest.push((key.clone(), value.clone()));
            }
        }
        if let Some(mode) = lib_mode {
            rest.push(("sslmode".into(), mode));
        }
        let mut base =
            Config::from_str(&conninfo::to_words(&rest)).map_err(|e| usage(&e.to_string()))?;
        let user = base
            .get_user()
            .map(str::to_string)
            .unwrap_or_else(|| env("USER").unwrap_or_else(|| "postgres".into()));
        base.user(&user);
        if base.get_dbname().is_none() {
            base.dbname(&user);
        }
        if base.get_application_name().is_none() {
            base.application_name("settle");
        }
        let endpoints = endpoints(&params).map_err(|e| usage(&e))?;
        let attrs = match get(&params, "target_session_attrs") {
            None => SessionAttrs::Any,
            Some(v) => SessionAttrs::parse(v).ok_or_else(|| {
                usage(&format!(
                    "target_session_attrs={v}: not one of {}",
                    SessionAttrs::VALUES
                ))
            })?,
        };
        let timeout = match get(&params, "connect_timeout") {
            None => Some(DEFAULT_CONNECT_TIMEOUT),
            Some(v) => match v.trim().parse::<i64>() {
                // libpq's rule: 0 or less waits for ever, less than 2 s is 2 s.
                Ok(s) if s <= 0 => None,
                Ok(s) => Some(Duration::from_secs(s.max(2).unsigned_abs())),
                Err(_) => {
                    return Err(usage(&format!(
                        "connect_timeout={v}: not a number of seconds"
                    )));
                }
            },
        };
        let reads = match get(&params, "reads") {
            None => Reads::Auto,
            Some(v) => v.parse().map_err(|e: String| usage(&e))?,
        };
        let password = get(&params, "password").map(str::to_string);
        let passfile = match &password {
            Some(_) => None,
            None => pgpass::file(get(&params, "passfile"), env).filter(|f| trusted(f)),
        };
        let shown = shown(
            &user,
            &endpoints,
            params.iter().any(|(k, _)| k == "port"),
            base.get_dbname(),
        );
        Ok(Address {
            base,
            endpoints,
            password,
            passfile,
            attrs,
            reads,
            timeout,
            shown,
            tls,
        })
    }

    /// `user@host:port/db` (hosts listed with commas): what errors, the
    /// header and logs call it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the address lists more than one host.
    pub(super) fn lists_hosts(&self) -> bool {
        self.endpoints.len() > 1
    }

    /// What the address's `target_session_attrs` asks.
    #[cfg(test)]
    pub(super) fn attrs(&self) -> SessionAttrs {
        self.attrs
    }

    /// How long one host may take, as the address and environment say.
    pub(super) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The same address with its reads sent as `reads` says.
    pub(super) fn reading_from(&self, reads: Reads) -> Address {
        Address {
            reads,
            ..self.clone()
        }
    }

    /// The server the reading connection goes to: a standby when the
    /// address lists several hosts and asks nothing itself (`reads=auto`),
    /// as `--reads` says otherwise. Writes always go to the primary.
    pub(super) fn reader_attrs(&self) -> SessionAttrs {
        match (self.reads, self.attrs) {
            (Reads::Primary, SessionAttrs::Any) => SessionAttrs::Primary,
            (Reads::Standby, _) => SessionAttrs::Standby,
            (Reads::Auto, SessionAttrs::Any) if self.lists_hosts() => SessionAttrs::PreferStandby,
            (_, attrs) => attrs,
        }
    }

    pub(super) fn tls(&self) -> Result<Tls> {
        super::tls::connector(&self.tls).map_err(|problem| {
            Error::ledger(
                Path::new(&self.shown),
                problem,
                "check sslrootcert and the system's certificates",
            )
        })
    }

    #[cfg(test)]
    pub(super) fn connect(&self, tls: Tls) -> Result<Client> {
        self.connect_as(&tls, self.attrs, self.timeout, "connecting")
            .map(|(client, _)| client)
    }

    /// The first host, in the address's order, whose session `attrs`
    /// accepts, with what the server said it is.
    pub(super) fn connect_as(
        &self,
        tls: &Tls,
        attrs: SessionAttrs,
        within: Option<Duration>,
        doing: &str,
    ) -> Result<(Client, Role)> {
        let configs: Vec<(Endpoint, Config)> = self
            .endpoints
            .iter()
            .map(|e| (e.clone(), self.config_for(e)))
            .collect();
        match hosts::connect(&configs, tls, attrs, within) {
            Ok((client, role, _)) => Ok((client, role)),
            Err(mut failures) => Err(match (failures.len(), failures.pop()) {
                (1, Some((_, Failed::Pg(e)))) => {
                    super::error::pg_error(Path::new(&self.shown), doing, e)
                }
                (_, last) => {
                    failures.extend(last);
                    let each: Vec<String> = failures
                        .iter()
                        .map(|(host, why)| format!("{host}: {why}"))
                        .collect();
                    super::error::failure(
                        Path::new(&self.shown),
                        doing,
                        &each.join("; "),
                        Fault::Lost,
                    )
                }
            }),
        }
    }

    /// The client library's configuration for one host, with the password
    /// the address gave or the password file holds for that host.
    fn config_for(&self, endpoint: &Endpoint) -> Config {
        let mut config = self.base.clone();
        if !endpoint.host.is_empty() {
            config.host(&endpoint.host);
        }
        if let Some(addr) = endpoint.hostaddr {
            config.hostaddr(addr);
        }
        config.port(endpoint.port);
        let from_file = || {
            let path = self.passfile.as_ref()?;
            let wanted = pgpass::Wanted {
                host: &endpoint.host,
                port: endpoint.port,
                dbname: self.base.get_dbname().unwrap_or_default(),
                user: self.base.get_user().unwrap_or_default(),
            };
            pgpass::lookup(path, &wanted, &mut |_| {})
        };
        if let Some(password) = self.password.clone().or_else(from_file) {
            config.password(password);
        }
        config
    }
}

/// The address's keywords, then a service's for what it leaves out, then
/// the environment's.
fn with_defaults(mut params: Params, env: &dyn Fn(&str) -> Option<String>) -> Result<Params> {
    let service = get(&params, "service")
        .map(str::to_string)
        .or_else(|| env("PGSERVICE"));
    if let Some(name) = service {
        let files = service_file::files(env);
        let found = service_file::lookup(&name, &files).map_err(|why| {
            Error::Usage(format!(
                "service={}: {why}\n  what to do: define [{0}] in one of those files, or set PGSERVICEFILE",
                crate::text::sanitize(&name)
            ))
        })?;
        let mut merged: Params = found
            .into_iter()
            .filter(|(k, _)| get(&params, k).is_none())
            .collect();
        merged.append(&mut params);
        params = merged;
    }
    for (key, var) in FROM_ENV {
        if get(&params, key).is_none()
            && let Some(value) = env(var)
        {
            params.push(((*key).to_string(), value));
        }
    }
    Ok(params)
}

/// The hosts to try, in order: `host` and `hostaddr` lists paired, `port`
/// one for all or one per host, as libpq pairs them.
fn endpoints(params: &Params) -> std::result::Result<Vec<Endpoint>, String> {
    let list = |key: &str| -> Vec<String> {
        get(params, key)
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    };
    let (mut hosts, addrs, ports) = (list("host"), list("hostaddr"), list("port"));
    if !addrs.is_empty() && !hosts.is_empty() && addrs.len() != hosts.len() {
        return Err(format!(
            "could not match {} host names to {} hostaddr values",
            hosts.len(),
            addrs.len()
        ));
    }
    let n = hosts.len().max(addrs.len());
    if n == 0 {
        hosts.push("localhost".into());
    }
    let n = n.max(1);
    if ports.len() > 1 && ports.len() != n {
        return Err(format!(
            "could not match {} port numbers to {n} hosts",
            ports.len()
        ));
    }
    (0..n)
        .map(|i| {
            let port = ports
                .get(i)
                .or(ports.first())
                .map(|p| p.trim())
                .unwrap_or("");
            let port = match port {
                "" => 5432,
                p => p.parse().map_err(|_| {
                    format!("invalid port number: \"{}\"", crate::text::sanitize(p))
                })?,
            };
            let hostaddr =
                match addrs.get(i).map(|a| a.trim()).filter(|a| !a.is_empty()) {
                    None => None,
                    Some(a) => Some(a.parse().map_err(|_| {
                        format!("invalid hostaddr: \"{}\"", crate::text::sanitize(a))
                    })?),
                };
            let host = hosts.get(i).cloned().unwrap_or_default();
            let host = if host.is_empty() && hostaddr.is_none() {
                "localhost".into()
            } else {
                host
            };
            Ok(Endpoint {
                host,
                hostaddr,
                port,
            })
        })
        .collect()
}

/// Whether a password file may be read: libpq ignores one that group or
/// others may read or write, and says so once.
fn trusted(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    if meta.permissions().mode() & 0o077 == 0 {
        return true;
    }
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "settle: warning: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        );
    });
    false
}

/// `sslmode=verify-ca|verify-full` and `sslrootcert=FILE` are settle's to
/// apply; the client library gets `require` for them (it knows
/// disable/prefer/require only), other modes as they are.
fn tls_wish(params: &Params) -> (TlsWish, Option<String>) {
    let mut wish = TlsWish {
        root_cert: get(params, "sslrootcert").map(Into::into),
        ..TlsWish::default()
    };
    let lib_mode = match get(params, "sslmode") {
        Some("verify-full") => {
            wish.verify = Verify::ChainAndHost;
            Some("require".to_string())
        }
        Some("verify-ca") => {
            wish.verify = Verify::Chain;
            Some("require".to_string())
        }
        other => other.map(str::to_string),
    };
    (wish, lib_mode)
}

fn shown(user: &str, endpoints: &[Endpoint], with_port: bool, db: Option<&str>) -> String {
    let hosts: Vec<String> = endpoints
        .iter()
        .map(|e| {
            if with_port {
                e.shown()
            } else {
                e.shown()
                    .rsplit_once(':')
                    .map(|(h, _)| h.to_string())
                    .unwrap_or_default()
            }
        })
        .collect();
    let db = db.unwrap_or("?");
    crate::text::sanitize(&format!("{user}@{}/{db}", hosts.join(","))).into_owned()
}

/// `spec` with its reads sent as `reads` says (`primary`, `standby`,
/// `auto`), when it is a PostgreSQL address: `--reads` and a named
/// ledger's `reads` key become the address's own `reads` keyword, the
/// last one set, so they override it. A SQLite path as it is.
pub fn with_reads(spec: &Path, reads: Reads) -> PathBuf {
    let Some(text) = spec.to_str().filter(|_| is_address(spec)) else {
        return spec.to_path_buf();
    };
    let reads = reads.as_str();
    let text = text.trim_end();
    PathBuf::from(if !text.contains("://") {
        format!("{text} reads={reads}")
    } else if text.contains('?') {
        format!("{text}&reads={reads}")
    } else {
        format!("{text}?reads={reads}")
    })
}

/// An address as it may be shown in an error when it could not be parsed:
/// the text after the scheme's `user:` and before `@` is dropped, and so is
/// any `password=` value.
fn redact(text: &str) -> String {
    let mut out = text.to_string();
    if let Some(scheme_end) = out.find("://")
        && let Some(at) = out[scheme_end + 3..].find('@').map(|i| i + scheme_end + 3)
        && let Some(colon) = out[scheme_end + 3..at]
            .find(':')
            .map(|i| i + scheme_end + 3)
    {
        out.replace_range(colon..at, ":***");
    }
    let words: Vec<String> = out
        .split(' ')
        .map(|w| match w.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            _ => w.to_string(),
        })
        .collect();
    crate::text::sanitize(&words.join(" ")).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_key_value_forms_are_addresses_and_paths_are_not() {
        assert!(is_address(Path::new("postgres://u@h/db")));
        assert!(is_address(Path::new("postgresql://h/db")));
        assert!(is_address(Path::new("host=/tmp dbname=ledger")));
        assert!(!is_address(Path::new("ledger.db")));
        assert!(!is_address(Path::new("./postgres/ledger.db")));
        assert!(!is_address(Path::new("weird=name.db")));
    }

    #[test]
    fn the_shown_name_never_carries_the_password() {
        let a =
            Address::parse(Path::new("postgres://alice:s3cret@db.example:6432/ledger")).unwrap();
        assert_eq!(a.shown(), "alice@db.example:6432/ledger");
        assert!(!format!("{a:?}").contains("s3cret"));
        let b = Address::parse(Path::new("host=db user=bob password=s3cret dbname=l")).unwrap();
        assert_eq!(b.shown(), "bob@db/l");
        assert_eq!(
            redact("postgres://alice:s3cret@h/db"),
            "postgres://alice:***@h/db"
        );
        assert_eq!(redact("host=h password=s3cret"), "host=h password=***");
    }

    fn parse(spec: &str, env: &[(&str, &str)]) -> Address {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Address::parse_with(Path::new(spec), &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .unwrap()
    }

    #[test]
    fn verifying_tls_modes_and_the_root_certificate_are_settles_to_apply() {
        let a = parse(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=x",
            &[],
        );
        assert_eq!(a.tls.verify, Verify::ChainAndHost);
        assert_eq!(a.tls.root_cert.as_deref(), Some(Path::new("/etc/ca.pem")));
        assert_eq!(a.base.get_ssl_mode(), postgres::config::SslMode::Require);
        assert_eq!(a.base.get_application_name(), Some("x"));
        let a = parse("host=h sslmode=verify-ca dbname=l", &[]);
        assert_eq!(a.tls.verify, Verify::Chain);
        assert_eq!(parse("postgres://u@h/db", &[]).tls, TlsWish::default());
        let a = parse("postgres://u@h/db", &[("PGSSLMODE", "verify-full")]);
        assert_eq!(a.tls.verify, Verify::ChainAndHost);
    }

    #[test]
    fn the_environment_fills_what_the_address_leaves_out() {
        let env = [
            ("PGHOST", "/run/pg"),
            ("PGPORT", "5433"),
            ("PGUSER", "ops"),
            ("PGPASSWORD", "pw"),
        ];
        let a = parse("postgres:///ledger", &env);
        assert_eq!(a.shown(), "ops@/run/pg:5433/ledger");
        assert_eq!(a.password.as_deref(), Some("pw"));
        assert_eq!(a.timeout, Some(DEFAULT_CONNECT_TIMEOUT));
        let a = parse(
            "host=/run/pg connect_timeout=1",
            &[("PGCONNECT_TIMEOUT", "30"), ("USER", "me")],
        );
        assert_eq!(
            (a.timeout, a.shown()),
            (Some(Duration::from_secs(2)), "me@/run/pg/me")
        );
        assert_eq!(
            parse("host=h", &[("PGCONNECT_TIMEOUT", "7")]).timeout,
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse("host=h connect_timeout=0", &[]).timeout, None);
    }

    #[test]
    fn an_address_lists_hosts_and_the_name_shown_says_what_it_means() {
        let a = parse(
            "postgresql://postgres@/ledger?host=/a,/b&port=5432,5433&target_session_attrs=read-write",
            &[],
        );
        assert_eq!(a.shown(), "postgres@/a:5432,/b:5433/ledger");
        assert_eq!(a.attrs(), SessionAttrs::ReadWrite);
        assert!(a.lists_hosts());
        let a = parse(
            "postgresql://postgres@localhost/ledger?host=/var/run/postgresql",
            &[],
        );
        assert_eq!(a.shown(), "postgres@/var/run/postgresql/ledger");
        let a = parse(
            "postgresql://u@h1:5432,h2/db?target_session_attrs=prefer-standby",
            &[],
        );
        assert_eq!(a.shown(), "u@h1:5432,h2:5432/db");
        assert_eq!(a.attrs(), SessionAttrs::PreferStandby);
        let bad = |spec: &str| {
            Address::parse_with(Path::new(spec), &|_| None)
                .unwrap_err()
                .to_string()
        };
        assert!(bad("host=a,b,c port=1,2").contains("could not match 2 port numbers to 3 hosts"));
        assert!(bad("host=a target_session_attrs=leader").contains("prefer-standby"));
        assert!(bad("host=a connect_timeout=soon").contains("connect_timeout=soon"));
    }
}
