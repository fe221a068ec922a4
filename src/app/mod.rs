//! The console's model, pure: plain data ([`App`]), the [`update`] that
//! obeys an [`Intent`] and the [`apply`] that takes in a [`Msg`] from the
//! shell, both saying what the shell must do as [`Effect`]s. Nothing here
//! touches the terminal, the clock or the ledger: `now`, pages and results
//! arrive as messages, so every behaviour is testable from a key script.
//!
//! The files are layered, and each imports only those below it:
//!
//! - plain data: [`window`] (paging math), [`layout`], [`pane`] (the one
//!   cursor every view scrolls with), [`form`] (the decision form),
//!   [`bulk`], [`probe`], [`export`], [`clusters`] (the
//!   queue grouped), [`scan`] (how
//!   far a filter read without an index got), [`access`] (whether it may
//!   write);
//! - [`effect`] (what the shell must do, by who does it) and [`msg`] (what
//!   it reports back); [`drills`] (the drills loaded: the Drills view's
//!   rows, open case, filter and sort, two runs compared, a run started
//!   from the console, and the links between cases and operations);
//! - [`model`]: `App`, its modes and their data;
//! - the handlers that change it: `navigation`, `filtering`, `decisions`,
//!   `bulk_flow`, `probe_flow`, `export_flow`, `pointer`
//!   (the mouse);
//! - `update`, which dispatches intents and messages to them.

pub(crate) mod access;
pub(crate) mod bulk;
mod bulk_flow;
pub(crate) mod clusters;
mod decisions;
pub(crate) mod drills;
pub(crate) mod effect;
pub(crate) mod export;
mod export_flow;
mod filtering;
pub(crate) mod form;
pub(crate) mod history;
pub(crate) mod layout;
pub(crate) mod model;
pub(crate) mod msg;
mod navigation;
pub(crate) mod pane;
mod pointer;
pub(crate) mod probe;
mod probe_flow;
pub(crate) mod reading;
pub(crate) mod scan;
#[cfg(test)]
pub(crate) mod testkit;
mod update;
pub(crate) mod window;

pub use crate::console::input::intent::{Intent, View};
pub use clusters::ClustersPane;
pub use drills::{DrillRow, DrillsPane, LoadedDrill};
pub use effect::{Count, Effect, PageSource, Read, ScanRead, Ticket, Write};
pub use export::{ExportRequest, ExportRows};
pub use model::{App, DetailPane, FormSlot, LedgerAccess, ListState, Mode, Refresh, Status};
pub use msg::{DecisionOutcome, DecisionResult, Msg, PageRows};
pub use pane::{ListId, Pane};
pub use update::{apply, update};

#[cfg(test)]
mod tests;
