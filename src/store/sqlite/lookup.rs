//! Finding one operation by its natural key `(account, op_type, idem_key)`:
//! how the console links a drill case to the operation `settle drill
//! import` wrote for it. One indexed read (the natural key is unique).

use rusqlite::{OptionalExtension, params};

use super::conn::Sqlite;
use crate::domain::OperationId;
use crate::error::Result;

impl Sqlite {
    /// The id of the operation with this natural key, if the ledger holds it.
    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        self.conn
            .query_row(
                "SELECT id FROM operations WHERE account = ?1 AND op_type = ?2 AND idem_key = ?3",
                params![account, op_type, key],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map(|id| id.map(OperationId))
            .map_err(|e| self.err("finding an operation by its key", e))
    }
}
