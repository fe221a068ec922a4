//! Acting on every row a filter matches, as `settle decide --filter` does
//! from the command line, so an incident's thousand rows are one decision
//! and not a thousand keystrokes: `*` records "all rows of this list
//! matching its query" (never the rows themselves), a/n/r/c then open the
//! decision form on it, the reader judges every matching row off the
//! screen's thread, and the writer records the passing ones in guarded
//! batches, reporting progress. This file holds the plain data they pass
//! around; the keys and answers are `bulk_flow`'s, the judging and writing
//! `crate::console::effects`'.

use std::sync::Arc;

use super::pane::ListId;
use crate::domain::{DecisionDraft, IdLabels, OperationId};
use crate::query::Query;

/// Rows shown as a sample on the form, and ids listed per group.
pub const SAMPLE: usize = 5;

/// "Every row of `list` matching `query`": what `*` selects.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub list: ListId,
    pub query: Query,
    /// The filter as typed, to show.
    pub filter: String,
    /// From the counter, when it had answered for this query.
    pub count: Option<i64>,
}

/// One matching row as the preview saw it: the write is guarded by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub id: OperationId,
    pub version: i64,
    /// Its ledger's name, in a group of ledgers.
    pub ledger: Option<Arc<str>>,
}

/// Rows one rule would refuse, with the first reasons given.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusalGroup {
    pub rule: String,
    pub ids: Vec<OperationId>,
    pub reason: String,
}

/// What the rules make of every matching row, judged with `template`.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkPreview {
    pub template: DecisionDraft,
    /// The rows that would be written, each with the version it had.
    pub pass: Vec<Target>,
    pub refused: Vec<RefusalGroup>,
    /// Rows that changed or vanished while being listed.
    pub changed: Vec<OperationId>,
    /// The first few matching rows, one line each (sanitised).
    pub sample: Vec<String>,
    pub matched: usize,
    /// In a group of ledgers, how many would be written in each (in the
    /// order first met); empty for one ledger.
    pub per_ledger: Vec<(Arc<str>, usize)>,
}

impl BulkPreview {
    /// `pay 20, ship 8`: the rows to write per ledger of a group, or
    /// None for one ledger.
    pub fn per_ledger_text(&self) -> Option<String> {
        let parts: Vec<String> = self
            .per_ledger
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// How far the batched write got; the last one has `finished`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BulkWrite {
    pub total: usize,
    pub done: usize,
    pub written: usize,
    pub refused: Vec<OperationId>,
    pub conflicted: Vec<OperationId>,
    /// Rows of a group's ledger whose part could not be written at all.
    pub unwritten: Vec<OperationId>,
    /// Why the write stopped early (a busy ledger); the rest is unwritten.
    pub failed: Option<String>,
    pub finished: bool,
    /// In a group of ledgers, what came of each ledger's part.
    pub parts: Vec<LedgerPart>,
}

/// One ledger's part of a bulk decision over a group: written or refused
/// on its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LedgerPart {
    pub ledger: String,
    pub written: usize,
    pub refused: usize,
    pub conflicted: usize,
    /// Why none of its part could be written (it is down, read-only).
    pub failed: Option<String>,
}

impl BulkWrite {
    /// The part of `ledger`, made when first met.
    pub fn part(&mut self, ledger: &str) -> &mut LedgerPart {
        let at = match self.parts.iter().position(|p| p.ledger == ledger) {
            Some(at) => at,
            None => {
                self.parts.push(LedgerPart {
                    ledger: ledger.to_string(),
                    ..LedgerPart::default()
                });
                self.parts.len() - 1
            }
        };
        &mut self.parts[at]
    }
}

/// The form's bulk half: the selection, the preview once judged, and the
/// template of the preview asked for (so an edit asks again).
#[derive(Debug, Clone, PartialEq)]
pub struct Bulk {
    pub selection: Selection,
    pub preview: Option<BulkPreview>,
    pub asked: DecisionDraft,
}

/// The first few ids, then how many more.
pub fn id_list(ids: &[OperationId], labels: &IdLabels) -> String {
    let mut s: Vec<String> = ids
        .iter()
        .take(SAMPLE)
        .map(|id| labels.label(*id))
        .collect();
    if ids.len() > SAMPLE {
        s.push(format!("and {} more", ids.len() - SAMPLE));
    }
    s.join(", ")
}
