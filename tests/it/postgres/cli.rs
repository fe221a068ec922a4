//! The CLI on a PostgreSQL ledger, through the real binary and a throwaway
//! cluster (`kit/pg.rs`): `init` creates and refuses a second time, and
//! no output carries the password the address held. Cases that hold on both
//! backends live in `both_backends.rs`.

use crate::kit::pg;

use crate::kit::*;

/// The address with a password in it (the throwaway cluster trusts every
/// local connection, so any password is accepted).
fn with_password(db: &std::path::Path) -> String {
    format!("{} password=s3cret", db.display())
}

#[test]
fn init_creates_a_postgres_ledger_once_and_never_shows_the_password() {
    let Some(db) = pg::fresh_database("cli init") else {
        return;
    };
    let address = with_password(&db);
    let out = settle(&["init", &address]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("created postgres@"),
        "{}",
        stdout(&out)
    );
    let again = settle(&["init", &address]);
    assert_ne!(code(&again), 0);
    assert!(
        stderr(&again).contains("already holds a ledger"),
        "{}",
        stderr(&again)
    );
    for o in [&out, &again] {
        assert!(!stdout(o).contains("s3cret") && !stderr(o).contains("s3cret"));
    }
}
