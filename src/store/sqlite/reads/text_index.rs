//! Which text terms of a query the read model's trigram index answers:
//! `err:` terms of three characters or more whose candidates are few
//! (free text is read row by row: see `model/texts.rs`). A common
//! word is left to the walk in id order, which fills a page from its first
//! rows, where the index would first gather every candidate (a quarter of
//! the ledger for "timeout") to sort them.

use rusqlite::OptionalExtension;

use super::filter::{candidates_sql, phrase};
use crate::domain::TextSearch;
use crate::error::Result;
use crate::query::Query;
use crate::store::sql::TextTerm;
use crate::store::sqlite::conn::Sqlite;

/// Candidates above which a term is common: a walk finds a page of it in
/// the first few thousand rows of a million, sooner than the index would
/// gather this many candidates.
const RARE: i64 = 20_000;

/// The `err:` terms of `query` the index answers (judged once per filter).
pub(in crate::store::sqlite) fn indexed_terms(
    db: &Sqlite,
    query: &Query,
) -> Result<Vec<(TextTerm, String)>> {
    let judge = || rare_terms(db, query);
    let rare = match &*db.model.borrow() {
        Some(model) => model.rare_terms(&query.errors, judge)?,
        None => judge()?,
    };
    Ok(rare.into_iter().map(|t| (TextTerm::Error, t)).collect())
}

/// The `err:` terms of `query` with fewer than [`RARE`] candidates.
fn rare_terms(db: &Sqlite, query: &Query) -> Result<Vec<String>> {
    let terms = query
        .errors
        .iter()
        // FTS5 reads its query as a C string: a NUL would end it early.
        .filter(|t| TextSearch::Trigram.finds(t) && !t.contains('\0'));
    let mut rare = Vec::new();
    for text in terms {
        let sql = format!("SELECT 1 FROM ({}) LIMIT 1 OFFSET ?2", candidates_sql("?1"));
        let common = db
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_row(rusqlite::params![phrase(text), RARE - 1], |_| Ok(()))
                    .optional()
            })
            .map_err(|e| db.err("looking up a filter's text in the read model", e))?;
        if common.is_none() {
            rare.push(text.clone());
        }
    }
    Ok(rare)
}
