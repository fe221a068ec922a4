//! Finding one operation by a spec (an id, or `account/op_type/key`) or by
//! its natural key, through the shared lookups of [`crate::store::detail`].

use super::conn::Sqlite;
use crate::domain::OperationId;
use crate::error::Result;
use crate::store::detail;

impl Sqlite {
    /// Finds an operation by id (`42`) or natural key (`account/op_type/key`;
    /// the key may itself contain `/`).
    pub fn resolve(&self, spec: &str) -> Result<OperationId> {
        detail::resolve(&mut &self.conn, spec, &self.path, |e| {
            self.err("finding the operation", e)
        })
    }

    /// The id of the operation with this natural key, if the ledger holds it.
    pub fn operation_by_key(
        &self,
        account: &str,
        op_type: &str,
        key: &str,
    ) -> Result<Option<OperationId>> {
        detail::operation_by_key(&mut &self.conn, (account, op_type, key))
            .map_err(|e| self.err("finding an operation by its key", e))
    }
}
