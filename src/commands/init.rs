//! `settle init`: creates a new, empty ledger; refuses an existing file.

use std::path::Path;

use crate::error::Result;
use crate::store::Ledger;

pub fn run(path: &Path) -> Result<()> {
    Ledger::create(path)?;
    println!("created {}", path.display());
    Ok(())
}
