//! Every backend settle can open, in one table: a ledger's path goes to the
//! first backend that claims it. A new backend is one folder under `store/`
//! and one line here.

use std::path::Path;

use super::backend::Kind;
use super::{jobqueue, postgres, sqlite};

/// The backends, asked in order; the last claims whatever the others do not.
pub(crate) const BACKENDS: [&Kind; 3] = [&jobqueue::KIND, &postgres::KIND, &sqlite::KIND];

/// The backend that holds the ledger at `path`.
pub(crate) fn kind_of(path: &Path) -> &'static Kind {
    let last = BACKENDS[BACKENDS.len() - 1];
    BACKENDS
        .into_iter()
        .find(|kind| (kind.claims)(path))
        .unwrap_or(last)
}
