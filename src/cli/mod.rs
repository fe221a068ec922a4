//! The command line and the settings it resolves into: the clap types
//! ([`args`]), the [`config`] every entry point runs with, resolved once
//! from the flags and the environment, and the [`named`] ledgers of
//! `config.toml`. Parsing and resolving only; nothing here opens a ledger
//! or prints.

mod args;
pub(crate) mod config;
mod ledger_args;
pub mod ledger_set;
pub(crate) mod named;

pub use args::*;
