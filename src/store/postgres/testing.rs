//! Test support: a fresh, empty PostgreSQL database per test, on the server
//! `SETTLE_TEST_PG` names (a base address such as `host=/tmp/x
//! user=postgres`). Without it a test says it skipped and returns. Only
//! tests use this (and `tests/common/pg.rs` includes this file); the
//! throwaway-cluster harness replaces it in one spot.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use postgres::{Client, NoTls};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The address (as the CLI takes a LEDGER) of a new empty database, or
/// `None` when no server is configured.
pub fn fresh_database(name_hint: &str) -> Option<PathBuf> {
    let Ok(base) = std::env::var("SETTLE_TEST_PG") else {
        eprintln!("skipped: no PostgreSQL (set SETTLE_TEST_PG)");
        return None;
    };
    let hint: String = name_hint
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let name = format!(
        "t_{hint}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = Client::connect(&format!("{base} dbname=postgres"), NoTls)
        .unwrap_or_else(|e| panic!("SETTLE_TEST_PG={base}: {e}"));
    // One statement each: CREATE DATABASE refuses to run in the implicit
    // transaction of a multi-statement batch.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    Some(PathBuf::from(format!("{base} dbname={name}")))
}

/// A plain client on `db` (an address from [`fresh_database`]), for writing
/// rows the way a service would and reading them back.
pub fn connect(db: &std::path::Path) -> Client {
    Client::connect(&db.to_string_lossy(), NoTls)
        .unwrap_or_else(|e| panic!("connecting to {}: {e}", db.display()))
}
