//! The ledger's schema in PostgreSQL: its tables and version ([`tables`]),
//! the functions, indexes and triggers settle adds ([`objects`]), settle's
//! own tables of the triage queue ([`queue`]) and of each operation's events
//! ([`event_ops`]), and opening a ledger ([`opening`]), adopting a service's
//! database on the way ([`adopt`]).

mod adopt;
pub(super) mod event_ops;
pub(super) mod objects;
pub(super) mod opening;
pub(super) mod queue;
pub(super) mod tables;

pub(crate) use event_ops::Events;
pub use tables::{CONSOLE_TABLES, SCHEMA_VERSION, SERVICE_TABLES};
