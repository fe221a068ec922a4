//! A team's own operations table (most often Stripe's `idempotency_keys`
//! shape) opened by a mapping file the operator writes: which table, which
//! columns or expressions are settle's columns, which condition makes a
//! row stuck, and what each decision writes to the row. Read through the
//! job queues' view machinery ([`super::engine`]); decided on in
//! [`decide`]. The file is `--map FILE`, else `mapping.toml` beside the
//! receivers file. Its format is written in `docs/mapped-tables.md`.

pub(super) mod decide;
pub(super) mod file;
mod sql;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use file::Mapping;

use super::session::JobQueue;
use crate::error::Result;
use crate::store::backend::{Opened, Session};
use crate::store::open::OpenReport;
use crate::store::postgres::{Foreign, pg_error};

/// The mapping file's name beside the receivers file.
pub const MAPPING_FILE: &str = "mapping.toml";

/// The mapping file for this process, and whether it was named (`--map`).
static CONFIGURED: OnceLock<Option<(PathBuf, bool)>> = OnceLock::new();

/// Sets the mapping for the PostgreSQL ledgers this process opens:
/// `named` (`--map FILE`), else `mapping.toml` beside the `receivers`
/// file when there is one. A named mapping applies to every PostgreSQL
/// address opened; one found beside the receivers file only where the
/// database has its table. The first call wins.
pub fn use_mapping(named: Option<PathBuf>, receivers: Option<&Path>) {
    let beside = || {
        let file = receivers?.parent()?.join(MAPPING_FILE);
        file.is_file().then_some((file, false))
    };
    let chosen = named.map(|f| (f, true)).or_else(beside);
    let _ = CONFIGURED.set(chosen);
}

/// The mapping that applies to the database of `session`, loaded and
/// checked: none configured, or one found beside the receivers file whose
/// table is not there, is `None`.
pub(super) fn applies(session: &mut Foreign) -> Result<Option<&'static Mapping>> {
    let Some(Some((file, named))) = CONFIGURED.get() else {
        return Ok(None);
    };
    let mapping = Mapping::load(file)?;
    let there = sql::has_table(&mut session.client, &mapping)
        .map_err(|e| pg_error(&session.shown, "looking for the mapped table", e))?;
    if !there && !named {
        return Ok(None);
    }
    if !there {
        return Err(mapping.refused(
            &mapping.table,
            &format!("names a table {} does not have", session.shown.display()),
            "write the table's name as psql's \\dt shows it (schema.table where it is not on the search path)",
        ));
    }
    sql::validate(&mut session.client, &mapping)?;
    // Leaked once per open: the decision transaction and the view hold it
    // for as long as the ledger is open, which is the process's life.
    Ok(Some(Box::leak(Box::new(mapping))))
}

/// Opens the mapped table at `path` on `session`.
pub(super) fn open(
    path: &Path,
    session: Foreign,
    mapping: &'static Mapping,
    read_only: bool,
    wait: Duration,
) -> Result<Opened> {
    let mut queue = JobQueue::new(path, session, sql::engine(mapping), read_only, wait)?;
    queue.mapped = Some(mapping);
    let mut report = OpenReport::default();
    if !queue.is_read_only() {
        let made = queue.ensure_settle_schema()?;
        let schema = if made {
            format!("made the settle schema beside {}; ", mapping.table.text)
        } else {
            String::new()
        };
        report.upgraded = Some(format!("{schema}{}", mapping.summary()));
    }
    Ok((Box::new(queue), report))
}
