//! `settle adopt`: adopts (or migrates) a ledger explicitly, with its
//! progress on stderr (a bar on a terminal, else a line per step), since building the indexes of a big
//! ledger takes a while. The only write is the adoption itself; reading
//! commands never adopt, so looking at a ledger never changes it.

use std::path::Path;

use super::output::emit;
use super::progress::open_writable;
use crate::error::Result;

pub fn run(path: &Path) -> Result<()> {
    let (ledger, report) = open_writable("adopting", path)?;
    if ledger.is_read_only() {
        return Err(ledger.why_not_writable());
    }
    let line = report.upgraded.unwrap_or_else(|| {
        format!(
            "settle: {} is already adopted (schema {}); nothing to do",
            ledger.path().display(),
            ledger.schema_version()
        )
    });
    emit(|out| writeln!(out, "{line}"))
}
