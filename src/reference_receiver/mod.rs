//! The reference receiver (`settle receiver ...`): a test and demo tool, a
//! receiver that keeps its word on idempotency keys, for the probe, the
//! worker and the drill to run against. Its command line ([`args`]), its
//! commands ([`serve`]) and its own database ([`db`], not a ledger). It
//! never opens or writes a ledger.

pub(crate) mod args;
pub(crate) mod db;
mod serve;

pub use serve::run;
