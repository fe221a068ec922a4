//! What the ledger's reads can count on, as the reader last said: whether
//! filters have an index yet, which text terms an index finds, and how far
//! the read model is behind the ledger (the header says "catching up
//! n/N" meanwhile).

use super::scan::thousands;
use crate::domain::{CatchUp, TextSearch};
use crate::query::Query;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// No index serves filters here: a filter is read a slice of ids at
    /// a time, its rows shown as they are found.
    pub filters_scan: bool,
    pub text_search: TextSearch,
    /// The read model is reading what was written while nobody watched:
    /// what is on screen is what it holds so far.
    pub catching_up: Option<CatchUp>,
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            filters_scan: false,
            text_search: TextSearch::Unindexed,
            catching_up: None,
        }
    }
}

impl Reading {
    /// "catching up n/N" while the read model catches up, for the header.
    pub fn catching_up_label(&self) -> Option<String> {
        self.catching_up.map(|c| {
            format!(
                "catching up {}/{}",
                thousands(c.done.min(c.total)),
                thousands(c.total)
            )
        })
    }

    /// Whether `query` has a text term the text index cannot find: an
    /// `err:` term too short for trigrams, or free text, which the index
    /// does not hold. With no index for it, it is read as a scan, as every
    /// filter is where no index exists yet.
    pub fn scans_text(&self, query: &Query) -> bool {
        self.text_search == TextSearch::Trigram
            && (!query.text.is_empty() || query.errors.iter().any(|t| !self.text_search.finds(t)))
    }
}
