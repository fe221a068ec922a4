//! The address's parsing: forms, the environment, TLS wishes, host lists.

use std::path::Path;
use std::time::Duration;

use crate::store::postgres::connect::address::*;
use crate::store::postgres::connect::hosts::SessionAttrs;
use crate::store::postgres::connect::tls::{TlsWish, Verify};

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
    let a = Address::parse(Path::new("postgres://alice:s3cret@db.example:6432/ledger")).unwrap();
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
