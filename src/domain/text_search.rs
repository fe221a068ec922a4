//! What a ledger's backend offers the text terms of a filter (`err:` and
//! free text), and how far its read model is behind the ledger: the
//! console shows both, and decides from the first whether a term is read
//! by a scan.

/// Characters a term needs for a trigram index to find it: a shorter one
/// holds no trigram.
pub const TRIGRAM: usize = 3;

/// How `err:` and free-text terms find their operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextSearch {
    /// `err:` terms through an index of trigrams over the error texts: a
    /// term of [`TRIGRAM`] characters or more; a shorter one, and free
    /// text (keys and result ids, one per operation, are not indexed),
    /// read every row.
    Trigram,
    /// No index serves them: every term reads every row.
    Unindexed,
}

impl TextSearch {
    /// Whether the index finds `err:` term `term`.
    pub fn finds(self, term: &str) -> bool {
        self == TextSearch::Trigram && term.chars().count() >= TRIGRAM
    }
}

/// A read model catching up with what was written while nobody read the
/// ledger: rows read so far of those there were to read when it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    pub done: u64,
    pub total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigram_index_finds_terms_of_three_characters_or_more() {
        assert!(TextSearch::Trigram.finds("abc"));
        assert!(TextSearch::Trigram.finds("éßü"));
        assert!(!TextSearch::Trigram.finds("ab"));
        assert!(!TextSearch::Unindexed.finds("timeout"));
    }
}
