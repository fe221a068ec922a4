//! Connecting to one of an address's hosts, tried in order as libpq tries
//! them: each attempt bounded by `connect_timeout` as a whole (the client
//! library bounds the socket's connect only, so a server that accepts and
//! never answers would hang it), and a session kept only when it is what
//! `target_session_attrs` asks for. The client library knows `any`,
//! `read-write` and `read-only`; `primary`, `standby` and `prefer-standby`
//! are settle's to check, so every value is checked here, the same way.

use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use postgres::{Client, Config};

use super::tls::Tls;

/// `--reads` (or `reads=` in the address, or a named ledger's `reads`
/// key): where the reads of an address that lists several hosts go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reads {
    /// Every read on the primary.
    Primary,
    /// Every read on a standby; none answering is an error.
    Standby,
    /// A standby when one answers, else the primary.
    #[default]
    Auto,
}

impl Reads {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reads::Primary => "primary",
            Reads::Standby => "standby",
            Reads::Auto => "auto",
        }
    }
}

impl FromStr for Reads {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Reads, String> {
        match text {
            "primary" => Ok(Reads::Primary),
            "standby" => Ok(Reads::Standby),
            "auto" => Ok(Reads::Auto),
            other => Err(format!(
                "reads={}: not one of primary, standby, auto",
                crate::text::sanitize(other)
            )),
        }
    }
}

/// libpq's `target_session_attrs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionAttrs {
    #[default]
    Any,
    ReadWrite,
    ReadOnly,
    Primary,
    Standby,
    PreferStandby,
}

impl SessionAttrs {
    pub(crate) const VALUES: &str = "any, read-write, read-only, primary, standby, prefer-standby";

    pub(crate) fn parse(text: &str) -> Option<SessionAttrs> {
        Some(match text {
            "any" => SessionAttrs::Any,
            "read-write" => SessionAttrs::ReadWrite,
            "read-only" => SessionAttrs::ReadOnly,
            "primary" => SessionAttrs::Primary,
            "standby" => SessionAttrs::Standby,
            "prefer-standby" => SessionAttrs::PreferStandby,
            _ => return None,
        })
    }

    /// Whether a server in `role` will do. `prefer-standby` takes any
    /// server; [`connect`] tries every host for a standby first.
    fn accepts(self, role: Role) -> bool {
        match self {
            SessionAttrs::Any | SessionAttrs::PreferStandby => true,
            SessionAttrs::ReadWrite => !role.read_only,
            SessionAttrs::ReadOnly => role.read_only,
            SessionAttrs::Primary => !role.in_recovery,
            SessionAttrs::Standby => role.in_recovery,
        }
    }
}

/// What a server said it is, asked once per new session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Role {
    /// A hot standby replaying a primary's WAL.
    pub in_recovery: bool,
    /// Its sessions refuse writes (a standby, or `default_transaction_read_only`).
    pub read_only: bool,
}

/// One host to try, as the address names it.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    pub host: String,
    pub hostaddr: Option<std::net::IpAddr>,
    pub port: u16,
}

impl Endpoint {
    pub(crate) fn shown(&self) -> String {
        let host = match (&self.hostaddr, self.host.as_str()) {
            (Some(addr), "") => addr.to_string(),
            _ => self.host.clone(),
        };
        format!("{host}:{}", self.port)
    }
}

/// A failed attempt: the client library's error when it gave one, so a
/// single host's failure is classified as before.
pub(crate) enum Failed {
    Pg(postgres::Error),
    Said(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Pg(e) => match e.as_db_error() {
                Some(db) => f.write_str(db.message()),
                None => f.write_str(&crate::store::postgres::error::with_source(e)),
            },
            Failed::Said(why) => f.write_str(why),
        }
    }
}

/// Tries each endpoint in order (a `prefer-standby` address: every one for
/// a standby, then the first that answered) and returns the first session
/// `attrs` accepts, with its role and the endpoint's index; else every
/// endpoint's failure, in order.
pub(crate) fn connect(
    configs: &[(Endpoint, Config)],
    tls: &Tls,
    attrs: SessionAttrs,
    within: Option<Duration>,
) -> Result<(Client, Role, usize), Vec<(String, Failed)>> {
    let mut failures = Vec::new();
    let mut fallback = None;
    for (i, (endpoint, config)) in configs.iter().enumerate() {
        let before = super::stalls::sockets();
        match attempt(config.clone(), tls.clone(), within) {
            Ok((client, role)) => {
                super::stalls::note(&endpoint.shown(), endpoint.port, &before);
                if attrs == SessionAttrs::PreferStandby && !role.in_recovery {
                    fallback = fallback.or(Some((client, role, i)));
                } else if attrs.accepts(role) {
                    return Ok((client, role, i));
                } else {
                    let why = if role.in_recovery {
                        "server is in hot standby mode"
                    } else {
                        "server is not in hot standby mode"
                    };
                    let why = match attrs {
                        SessionAttrs::ReadWrite => "session is read-only",
                        SessionAttrs::ReadOnly => "session is not read-only",
                        _ => why,
                    };
                    failures.push((endpoint.shown(), Failed::Said(why.to_string())));
                }
            }
            Err(e) => failures.push((endpoint.shown(), e)),
        }
    }
    fallback.ok_or(failures)
}

/// One connection and the question of its role, within `within` in all.
fn attempt(
    mut config: Config,
    tls: Tls,
    within: Option<Duration>,
) -> Result<(Client, Role), Failed> {
    let Some(within) = within else {
        return open(&config, tls);
    };
    config.connect_timeout(within);
    let (tx, rx) = mpsc::channel();
    // A thread, since the client library's connect cannot be abandoned:
    // one that outlives the bound ends with the server's answer or the
    // process, holding nothing the caller uses.
    std::thread::Builder::new()
        .name("pg-connect".into())
        .spawn(move || {
            let _ = tx.send(open(&config, tls));
        })
        .map_err(|e| Failed::Said(format!("starting a connection: {e}")))?;
    rx.recv_timeout(within).unwrap_or_else(|_| {
        Err(Failed::Said(format!(
            "timeout expired (connect_timeout {} s)",
            within.as_secs()
        )))
    })
}

fn open(config: &Config, tls: Tls) -> Result<(Client, Role), Failed> {
    let mut client = config.connect(tls).map_err(Failed::Pg)?;
    let row = client
        .query_one(
            // JIT off for the session, in the same round trip: settle's
            // statements read a page or stream rows, where compiling a
            // plan the server costs high took longer than running it.
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on',
                    set_config('jit', 'off', false)",
            &[],
        )
        .map_err(Failed::Pg)?;
    let role = Role {
        in_recovery: row.get(0),
        read_only: row.get(1),
    };
    Ok((client, role))
}
