//! Job queues read as ledgers: a PostgreSQL database holding Procrastinate's,
//! River's, Oban's or Graphile Worker's tables and none of settle's is opened in place, its jobs
//! listed, filtered, counted and shown through the same contract as a
//! ledger-v1 ledger ([`crate::store::backend`]), nothing copied, and a
//! decision on a Procrastinate job is carried out by the engine's own
//! functions and audited in settle's own schema. The engine is recognised
//! from its jobs table when the address is opened; every other database
//! goes on to [`crate::store::postgres`]. Each engine's SQL is in its own
//! file; the mapping is written in `docs/job-queues.md`.

mod backend;
mod decisions;
mod drills;
mod engine;
mod graphile;
mod history;
mod mapped;
mod oban;
mod probes;
mod procrastinate;
mod reads;
mod river;
mod schema;
mod session;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Duration;

use crate::error::Result;
use crate::store::backend::{Kind, Opened, Session};
use crate::store::open::{Access, OpenReport, Progress};
use crate::store::postgres::{self, foreign_session, is_address, pg_error};
use engine::EngineSql;
pub use mapped::use_mapping;
use session::JobQueue;
pub use session::{use_locked_after, use_removal};

/// Every engine settle reads, asked in order.
const ENGINES: [&EngineSql; 4] = [&procrastinate::SQL, &river::SQL, &oban::SQL, &graphile::SQL];

/// A PostgreSQL address whose database holds a job queue's tables; any
/// other address opens as [`postgres::KIND`] does, and creating is
/// always its.
pub(crate) const KIND: Kind = Kind {
    claims: is_address,
    create: postgres::KIND.create,
    create_if_absent: postgres::KIND.create_if_absent,
    open,
};

/// Opens the engine found at `path`, read in place; a database that holds
/// settle's `operations` (or no engine) is PostgreSQL's to open.
fn open(
    path: &Path,
    access: Access,
    wait: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Opened> {
    let read_only = access == Access::ReadOnly;
    let mut session = foreign_session(path, read_only, wait)?;
    if let Some(mapping) = mapped::applies(&mut session)? {
        return mapped::open(path, session, mapping, read_only, wait);
    }
    let Some(sql) = recognise(&mut session.client, &session.shown)? else {
        drop(session);
        return (postgres::KIND.open)(path, access, wait, progress);
    };
    let mut queue = JobQueue::new(path, session, sql, read_only, wait)?;
    let mut report = OpenReport {
        read_only_reason: sql.writes.is_none().then(|| {
            format!(
                "{}'s jobs, read in place: settle decides nothing on them yet",
                sql.name
            )
        }),
        ..OpenReport::default()
    };
    // Adopting a job queue's database is making settle's own schema there,
    // as a writable open adopts a service's ledger.
    if !queue.is_read_only() && queue.ensure_settle_schema()? {
        report.upgraded = Some(format!(
            "made the settle schema (decisions, retry requests, contracts) beside {}'s tables",
            sql.name
        ));
    }
    Ok((Box::new(queue), report))
}

/// The engine whose jobs table the database holds, unless it holds
/// settle's own `operations` (a ledger the engine's tables share a
/// database with stays settle's).
fn recognise(client: &mut ::postgres::Client, shown: &Path) -> Result<Option<&'static EngineSql>> {
    let tables: Vec<&str> = ENGINES.iter().map(|e| e.jobs).collect();
    let found = client
        .query(
            "SELECT name FROM unnest($1::text[]) AS name
             WHERE to_regclass(name) IS NOT NULL AND to_regclass('operations') IS NULL",
            &[&tables],
        )
        .map_err(|e| pg_error(shown, "looking for a job queue's tables", e))?;
    let names: Vec<String> = found.iter().filter_map(|r| r.try_get(0).ok()).collect();
    Ok(ENGINES
        .into_iter()
        .find(|e| names.iter().any(|n| n == e.jobs)))
}
