//! The columns settle adds to a SQLite ledger: the lists [`super::schema`]
//! migrates a file with (the columns every ledger must have, whichever
//! database, are [`crate::store::tables::REQUIRED_COLUMNS`]). Names only;
//! no statement runs here.

/// Columns settle adds to `decisions`, with their definition for a ledger
/// whose table lacks them.
const SETTLE_DECISION_COLUMNS: [(&str, &str); 2] = [
    ("extra_attempt", "INTEGER NOT NULL DEFAULT 0"),
    ("chain_hash", "TEXT"),
];

/// Columns a worker of settle's keeps in `retry_requests` (schema 5): who
/// claimed a request, until when, how often it ran, how it ended. The
/// contract leaves a worker's own columns unguarded.
const SETTLE_RETRY_COLUMNS: [(&str, &str); 5] = [
    ("claimed_by", "TEXT"),
    ("claim_expires_at", "TEXT"),
    ("runs", "INTEGER NOT NULL DEFAULT 0"),
    ("finished_at", "TEXT"),
    ("outcome", "TEXT"),
];

/// The settle columns each console table needs beyond the contract's.
pub(super) const SETTLE_COLUMNS: [(&str, &[(&str, &str)]); 2] = [
    ("decisions", &SETTLE_DECISION_COLUMNS),
    ("retry_requests", &SETTLE_RETRY_COLUMNS),
];
