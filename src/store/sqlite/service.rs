//! A ledger as a service makes it, for the sample data and tests.

use super::error::sqlite;
use crate::error::Result;

/// Creates a ledger the way a service does: a fresh SQLite file and a plain
/// SQL script of its own (tables and rows), without the console's tables,
/// indexes or schema version. Opening it with [`crate::store::Ledger::open`] then adopts
/// it. Used by `settle demo` so the sample data goes through the same path
/// as a real service's ledger.
pub fn create_service_ledger(path: &std::path::Path, sql: &str) -> Result<()> {
    if path.exists() {
        return Err(crate::Error::ledger(
            path,
            "already exists",
            "pick a new path for the sample ledger",
        ));
    }
    let mut conn = rusqlite::Connection::open(path)
        .map_err(|e| sqlite(path, "creating the ledger file", e))?;
    let tx = conn
        .transaction()
        .map_err(|e| sqlite(path, "running the service script", e))?;
    tx.execute_batch(sql)
        .map_err(|e| sqlite(path, "running the service script", e))?;
    tx.commit()
        .map_err(|e| sqlite(path, "committing the service script", e))
}
