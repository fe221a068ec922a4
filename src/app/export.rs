//! The export prompt: `e` asks for a file name (prefilled), Enter asks the
//! shell to write the marked rows, or every row the view's query matches,
//! in the format the extension names. What the file holds and how it is
//! written are `crate::export`'s and the reader's; this only decides which
//! rows, where, and what the status line says; its keys are
//! `export_flow`'s.

use std::path::PathBuf;

use crate::domain::OperationId;
use crate::export::FileFormat;
use crate::query::Query;

/// What the shell writes, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRequest {
    pub path: PathBuf,
    pub format: FileFormat,
    pub rows: ExportRows,
}

/// Which rows an export holds.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportRows {
    /// The operations `query` matches, newest first; only the marked ones
    /// when `marks` is not empty (marks are always rows of that query: a
    /// new filter clears them).
    Operations {
        query: Box<Query>,
        marks: Vec<OperationId>,
    },
    /// The whole audit trail, newest decision first.
    Audit,
}
