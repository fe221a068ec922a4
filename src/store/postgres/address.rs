//! Where a PostgreSQL ledger is: a `postgres://` or `postgresql://` URL, or
//! libpq's `key=value` form, with the usual `PG*` environment variables for
//! what it leaves out. Parses and connects; shows it as `user@host:port/db`
//! and never shows the password.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config};

use super::tls::{Tls, TlsWish, Verify};
use crate::error::{Error, Result};

/// A parsed PostgreSQL ledger address.
#[derive(Clone)]
pub struct Address {
    config: Config,
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
    "sslmode",
    "application_name",
    "connect_timeout",
    "options",
];

impl Address {
    /// Parses `spec`, filling what it leaves out from `PGHOST`, `PGPORT`,
    /// `PGUSER`, `PGPASSWORD`, `PGDATABASE` and `PGSSLMODE` as libpq does.
    pub fn parse(spec: &Path) -> Result<Address> {
        let raw = spec.to_str().unwrap_or_default();
        let env = |name: &str| std::env::var(name).ok();
        // The client library knows disable/prefer/require only: the
        // verifying modes and the root certificate are settle's to apply.
        let (text, tls) = take_tls_options(raw, &env);
        let text = text.as_str();
        let mut config = Config::from_str(text).map_err(|e| {
            Error::Usage(format!(
                "{}: not a PostgreSQL address: {}\n  what to do: write postgres://USER@HOST:PORT/DB or host=… dbname=…",
                redact(text),
                crate::text::sanitize(&e.to_string())
            ))
        })?;
        fill_from_env(&mut config, &env);
        let shown = shown(&config);
        Ok(Address { config, shown, tls })
    }

    /// `user@host:port/db`: what errors, the header and logs call it.
    pub fn shown(&self) -> &str {
        &self.shown
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

    pub(super) fn connect(&self, tls: Tls) -> Result<Client> {
        self.config
            .connect(tls)
            .map_err(|e| super::error::pg_error(Path::new(&self.shown), "connecting", e))
    }

    /// [`Address::connect`] giving up after `wait`: a reconnection on the
    /// console's thread must not hang it.
    pub(super) fn connect_within(&self, tls: Tls, wait: Duration) -> Result<Client> {
        let mut config = self.config.clone();
        config.connect_timeout(wait);
        config
            .connect(tls)
            .map_err(|e| super::error::pg_error(Path::new(&self.shown), "reconnecting", e))
    }
}

/// Takes `sslmode=verify-ca|verify-full` and `sslrootcert=FILE` out of an
/// address (URL query or `key=value` words), leaving `sslmode=require` for
/// the client library; `PGSSLMODE` and `PGSSLROOTCERT` stand in for what
/// the address leaves out.
fn take_tls_options(text: &str, env: &dyn Fn(&str) -> Option<String>) -> (String, TlsWish) {
    let url = text.contains("://");
    let (head, options, sep) = match text.split_once('?') {
        Some((head, query)) if url => (format!("{head}?"), query.to_string(), "&"),
        _ if url => (format!("{text}?"), String::new(), "&"),
        _ => (String::new(), text.to_string(), " "),
    };
    let mut wish = TlsWish::default();
    let mut mode = None;
    let mut kept = Vec::new();
    for word in options.split(sep).filter(|w| !w.is_empty()) {
        match word.split_once('=') {
            Some(("sslmode", value)) => mode = Some(value.to_string()),
            Some(("sslrootcert", value)) => wish.root_cert = Some(value.into()),
            _ => kept.push(word.to_string()),
        }
    }
    let mode = mode.or_else(|| env("PGSSLMODE"));
    wish.root_cert = wish
        .root_cert
        .or_else(|| env("PGSSLROOTCERT").map(Into::into));
    let lib_mode = match mode.as_deref() {
        Some("verify-full") => {
            wish.verify = Verify::ChainAndHost;
            Some("require")
        }
        Some("verify-ca") => {
            wish.verify = Verify::Chain;
            Some("require")
        }
        Some(other) => Some(other),
        None => None,
    };
    if let Some(m) = lib_mode {
        kept.push(format!("sslmode={m}"));
    }
    let rest = kept.join(sep);
    let out = if url && head.ends_with('?') && rest.is_empty() {
        head.trim_end_matches('?').to_string()
    } else {
        format!("{head}{rest}")
    };
    (out, wish)
}

/// Fills from the environment what the address left out, as libpq does.
fn fill_from_env(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) {
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(host) => {
                for h in host.split(',') {
                    config.host(h);
                }
            }
            None => {
                config.host("localhost");
            }
        }
    }
    if config.get_ports().is_empty()
        && let Some(port) = env("PGPORT").and_then(|p| p.parse().ok())
    {
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = env("PGUSER")
            .or_else(|| env("USER"))
            .unwrap_or_else(|| "postgres".to_string());
        config.user(&user);
    }
    if config.get_password().is_none()
        && let Some(password) = env("PGPASSWORD")
    {
        config.password(password);
    }
    if config.get_dbname().is_none() {
        let db = env("PGDATABASE")
            .or_else(|| config.get_user().map(str::to_string))
            .unwrap_or_default();
        config.dbname(&db);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(10));
    }
    if config.get_application_name().is_none() {
        config.application_name("settle");
    }
}

fn shown(config: &Config) -> String {
    let user = config.get_user().unwrap_or("?");
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .map(|p| format!(":{p}"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("?");
    crate::text::sanitize(&format!("{user}@{host}{port}/{db}")).into_owned()
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

    #[test]
    fn verifying_tls_modes_and_the_root_certificate_are_settles_to_apply() {
        let none = |_: &str| None;
        let (url, wish) = take_tls_options(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=x",
            &none,
        );
        assert_eq!(url, "postgres://u@h/db?application_name=x&sslmode=require");
        assert_eq!(wish.verify, Verify::ChainAndHost);
        assert_eq!(wish.root_cert.as_deref(), Some(Path::new("/etc/ca.pem")));
        let (kv, wish) = take_tls_options("host=h sslmode=verify-ca dbname=l", &none);
        assert_eq!(kv, "host=h dbname=l sslmode=require");
        assert_eq!(wish.verify, Verify::Chain);
        let (plain, wish) = take_tls_options("postgres://u@h/db", &none);
        assert_eq!(
            (plain.as_str(), wish),
            ("postgres://u@h/db", TlsWish::default())
        );
        let env = |k: &str| (k == "PGSSLMODE").then(|| "verify-full".to_string());
        let (url, wish) = take_tls_options("postgres://u@h/db", &env);
        assert_eq!(url, "postgres://u@h/db?sslmode=require");
        assert_eq!(wish.verify, Verify::ChainAndHost);
        assert!(Address::parse(Path::new("postgres://u@h/db?sslmode=verify-full")).is_ok());
    }

    #[test]
    fn the_environment_fills_what_the_address_leaves_out() {
        let mut c = Config::from_str("postgres:///ledger").unwrap();
        let env = |k: &str| match k {
            "PGHOST" => Some("/run/pg".to_string()),
            "PGPORT" => Some("5433".to_string()),
            "PGUSER" => Some("ops".to_string()),
            "PGPASSWORD" => Some("pw".to_string()),
            _ => None,
        };
        fill_from_env(&mut c, &env);
        assert_eq!(shown(&c), "ops@/run/pg:5433/ledger");
        assert_eq!(c.get_password(), Some(&b"pw"[..]));
    }
}
