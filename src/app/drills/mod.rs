//! The drills the console has loaded and what the operator does with
//! them: the runs and their pane ([`loaded`]), the files a folder or the
//! command line gave ([`files`]), comparing two runs ([`compare`]), the
//! links between a case and the ledger's operations ([`links`]), and
//! running a drill from the console ([`running`], [`flow`]).

pub(crate) mod compare;
pub(crate) mod files;
pub(crate) mod flow;
pub(crate) mod links;
pub(crate) mod loaded;
pub(crate) mod running;

pub use loaded::*;
