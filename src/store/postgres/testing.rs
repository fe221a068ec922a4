//! Test-only access to a PostgreSQL server: a fresh, empty database per
//! test. This minimal version reads a server's base address from
//! `SETTLE_TEST_PG` (e.g. `host=/tmp/pg user=postgres`); the throwaway
//! cluster harness replaces it here, in this one place. Without a server a
//! test says it was skipped and passes nothing silently.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Address, Pg};
use crate::store::BUSY_TIMEOUT;

/// The base address of the test server, or `None` (and a note on stderr)
/// when none is configured.
fn test_server() -> Option<String> {
    match std::env::var("SETTLE_TEST_PG") {
        Ok(base) if !base.trim().is_empty() => Some(base),
        _ => {
            eprintln!("skipped: no PostgreSQL (set SETTLE_TEST_PG)");
            None
        }
    }
}

/// The LEDGER address (as the CLI takes it) of a new, empty database, or
/// `None` when no server is at hand.
pub fn fresh_database(name_hint: &str) -> Option<PathBuf> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let base = test_server()?;
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
        "settle_{hint}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = postgres::Client::connect(&format!("{base} dbname=postgres"), postgres::NoTls)
        .expect("connecting to the test server");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&statement)
            .expect("creating a test database");
    }
    Some(PathBuf::from(format!("{base} dbname={name}")))
}

impl Pg {
    /// Connects to `address` without checking or adopting its schema: for
    /// tests that build the tables as a service would.
    pub(crate) fn connect_for_test(address: &std::path::Path, read_only: bool) -> Pg {
        let address = Address::parse(address).expect("a test address");
        Pg::connect(&address, read_only, BUSY_TIMEOUT).expect("connecting to the test database")
    }
}
