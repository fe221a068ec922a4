//! Where a PostgreSQL ledger is: a `postgres://` or `postgresql://` URL, or
//! libpq's `key=value` form, with the usual `PG*` environment variables for
//! what it leaves out. Parses and connects; shows it as `user@host:port/db`
//! and never shows the password.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::{Client, Config};

use super::conninfo::{self, Params, get};
use super::hosts::Reads;
use super::hosts::{self, Endpoint, Failed, Role, SessionAttrs};
use super::tls::{Tls, TlsWish, Verify};
use super::{pgpass, service_file};
use crate::error::{Error, Fault, Result};

/// How long one host may take to answer when neither the address nor
/// `PGCONNECT_TIMEOUT` says (libpq waits for ever; a console must not).
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed PostgreSQL ledger address.
#[derive(Clone)]
pub struct Address {
    /// Everything but the hosts, ports and password, which vary per host.
    pub(crate) base: Config,
    endpoints: Vec<Endpoint>,
    pub(crate) password: Option<String>,
    /// The password file to look in when the address has no password.
    passfile: Option<PathBuf>,
    attrs: SessionAttrs,
    reads: Reads,
    /// Per host, the whole attempt (None: wait for ever, as `0` asks).
    pub(crate) timeout: Option<Duration>,
    shown: String,
    pub(crate) tls: TlsWish,
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
    pub(crate) fn parse_with(spec: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Address> {
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
        let (attrs, timeout, reads) = session_options(&params).map_err(|e| usage(&e))?;
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

    /// The database's name (`dbname`, else the user's, as libpq fills it).
    pub fn database(&self) -> &str {
        self.base.get_dbname().unwrap_or_default()
    }

    /// Whether the address lists more than one host.
    /// Each host as shown (`host:port`), in the address's order.
    pub(crate) fn hosts_shown(&self) -> Vec<String> {
        self.endpoints.iter().map(Endpoint::shown).collect()
    }

    pub(crate) fn lists_hosts(&self) -> bool {
        self.endpoints.len() > 1
    }

    /// What the address's `target_session_attrs` asks.
    #[cfg(test)]
    pub(crate) fn attrs(&self) -> SessionAttrs {
        self.attrs
    }

    /// How long one host may take, as the address and environment say.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The same address with its reads sent as `reads` says.
    pub(crate) fn reading_from(&self, reads: Reads) -> Address {
        Address {
            reads,
            ..self.clone()
        }
    }

    /// The server the reading connection goes to: a standby when the
    /// address lists several hosts and asks nothing itself (`reads=auto`),
    /// as `--reads` says otherwise. Writes always go to the primary.
    pub(crate) fn reader_attrs(&self) -> SessionAttrs {
        match (self.reads, self.attrs) {
            (Reads::Primary, SessionAttrs::Any) => SessionAttrs::Primary,
            (Reads::Standby, _) => SessionAttrs::Standby,
            (Reads::Auto, SessionAttrs::Any) if self.lists_hosts() => SessionAttrs::PreferStandby,
            (_, attrs) => attrs,
        }
    }

    pub(crate) fn tls(&self) -> Result<Tls> {
        super::tls::connector(&self.tls).map_err(|problem| {
            Error::ledger(
                Path::new(&self.shown),
                problem,
                "check sslrootcert and the system's certificates",
            )
        })
    }

    #[cfg(test)]
    pub(crate) fn connect(&self, tls: Tls) -> Result<Client> {
        self.connect_as(&tls, self.attrs, self.timeout, "connecting")
            .map(|(client, _)| client)
    }

    /// The first host, in the address's order, whose session `attrs`
    /// accepts, with what the server said it is.
    pub(crate) fn connect_as(
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
                    crate::store::postgres::error::pg_error(Path::new(&self.shown), doing, e)
                }
                (_, last) => {
                    failures.extend(last);
                    let each: Vec<String> = failures
                        .iter()
                        .map(|(host, why)| format!("{host}: {why}"))
                        .collect();
                    crate::store::postgres::error::failure(
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
            // libpq matches a bare hostaddr by its numbers.
            let host = match (endpoint.host.as_str(), endpoint.hostaddr) {
                ("", Some(addr)) => addr.to_string(),
                (host, _) => host.to_string(),
            };
            let wanted = pgpass::Wanted {
                host: &host,
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

/// `target_session_attrs`, `connect_timeout` and `reads`, each checked.
fn session_options(
    params: &Params,
) -> std::result::Result<(SessionAttrs, Option<Duration>, Reads), String> {
    let attrs = match get(params, "target_session_attrs") {
        None => SessionAttrs::Any,
        Some(v) => SessionAttrs::parse(v).ok_or_else(|| {
            format!(
                "target_session_attrs={v}: not one of {}",
                SessionAttrs::VALUES
            )
        })?,
    };
    let timeout = match get(params, "connect_timeout") {
        None => Some(DEFAULT_CONNECT_TIMEOUT),
        Some(v) => match v.trim().parse::<i64>() {
            // libpq's rule: 0 or less waits for ever, less than 2 s is 2 s.
            Ok(s) if s <= 0 => None,
            Ok(s) => Some(Duration::from_secs(s.max(2).unsigned_abs())),
            Err(_) => return Err(format!("connect_timeout={v}: not a number of seconds")),
        },
    };
    let reads = match get(params, "reads") {
        None => Reads::Auto,
        Some(v) => v.parse()?,
    };
    Ok((attrs, timeout, reads))
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
pub(crate) fn redact(text: &str) -> String {
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
