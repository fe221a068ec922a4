//! `settle init`: creates a new, empty ledger; refuses an existing file.

use std::path::Path;

use crate::error::Result;
use crate::store::Ledger;

pub fn run(path: &Path) -> Result<()> {
    // The ledger's own name for itself: a PostgreSQL address is shown
    // without its password.
    let ledger = Ledger::create(path)?;
    println!("created {}", ledger.path().display());
    Ok(())
}
