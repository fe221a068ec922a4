//! What settle kept on the service's own tables up to schema 5, by name,
//! so the migration to 6 takes it off: the nine triggers that maintained
//! the summaries inside every service transaction, the indexes settle
//! built on `operations` and `events`, and the summary tables. The read
//! model beside the ledger ([`super::model`]) holds all of it now.

/// The triggers on `operations`, `attempts` and `events`.
pub(super) const OLD_TRIGGERS: [&str; 9] = [
    "settle_attempts_insert",
    "settle_attempts_update",
    "settle_attempts_delete",
    "settle_events_insert",
    "settle_events_update",
    "settle_events_delete",
    "settle_operations_insert",
    "settle_operations_update",
    "settle_operations_delete",
];

/// The indexes on `operations` and `events`.
pub(super) const OLD_INDEXES: [&str; 7] = [
    "settle_operations_state",
    "settle_events_op",
    "settle_operations_account",
    "settle_operations_type",
    "settle_operations_key",
    "settle_operations_queue",
    "settle_operations_reserved_lease",
];

/// The summary tables the triggers kept.
pub(super) const OLD_TABLES: [&str; 2] = ["settle_op_summary", "settle_state_counts"];
