//! `settle`: a console for settling operations whose outcome is unknown.
//!
//! The architecture, in the order data flows:
//!
//! - [`store`] owns every SQL statement: it opens, adopts and migrates a
//!   ledger, pages through operations, and records decisions atomically
//!   (one `BEGIN IMMEDIATE` transaction guarded by the version the operator
//!   saw). It returns [`domain`] types.
//! - [`domain`] is the ledger's vocabulary and the decision rules, pure.
//! - [`query`] parses the filter language shared by the CLI and the console.
//! - [`drill`] reads `retry-drill/1` results and analyses them honestly.
//! - [`config`] resolves flags and environment once (operator, read-only,
//!   colour, keymap) for the CLI, the console and the demo alike;
//!   [`labels`] words states and decisions the same way for both.
//! - [`cli`] and [`commands`] are the scriptable interface; [`tui`] is the
//!   only module that touches the terminal: it turns keys into [`intent`]s
//!   through the [`keymap`] (clicks and the wheel through [`mouse`]),
//!   drives the pure [`app`] model (`update`, `apply`) and [`ui`]
//!   (`render`), and hands effects to the
//!   [`workers`] (a reader and a writer, each with its own connection) and
//!   the [`counter`], which run the blocking calls of [`effects`] and answer
//!   with messages; the [`watch`] notices other processes' commits and a
//!   ledger file deleted or replaced.
//! - [`receivers`] reads `receivers.toml` and runs a receiver's `lookup`
//!   and `retry` commands as child processes (timeout, output cap), turning
//!   their exits into outcomes; it never touches the ledger. [`probing`]
//!   runs those lookups for `settle probe` and the console's `p` and
//!   records each answer as a probe.
//! - [`text`] makes untrusted ledger text safe to print.
//! - [`named`] reads the named ledgers (`@NAME`) of `config.toml`.

pub mod app;
pub mod cli;
pub mod commands;
pub mod console;
pub mod domain;
pub mod drill;
pub mod error;
pub(crate) mod export;
pub(crate) mod labels;
pub mod query;
pub mod receivers;
pub(crate) mod reference_receiver;
pub mod store;
pub(crate) mod text;
pub(crate) mod ui;

pub use commands::demo;
pub use error::{Error, Result};
