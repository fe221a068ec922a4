//! The operation a receiver's action is about, as its `SETTLE_*`
//! variables carry it.

use crate::domain::{Operation, OperationId};

/// The operation an action is about: what its `SETTLE_*` variables say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub op_id: OperationId,
    pub account: String,
    pub op_type: String,
    pub key: String,
    pub fingerprint: String,
    /// The params JSON as the ledger stores it (`SETTLE_PARAMS`, empty when
    /// absent).
    pub params: Option<String>,
}

impl From<&Operation> for Subject {
    fn from(op: &Operation) -> Subject {
        Subject {
            op_id: op.id,
            account: op.account.clone(),
            op_type: op.op_type.clone(),
            key: op.idem_key.clone(),
            fingerprint: op.fingerprint.clone(),
            params: op.params.clone(),
        }
    }
}
