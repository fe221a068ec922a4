//! The PostgreSQL backend of the ledger: the same contract, rules and
//! guarantees as [`super::sqlite`], on the database services that write from
//! many machines already use. Only [`crate::store::Ledger`] calls it,
//! through [`crate::store::backend`]. The connection is [`conn::Pg`];
//! reaching a server is in [`connect`], the schema in [`schema`], `settle
//! copy` in [`copy`], and each part of the contract (reads, history,
//! decisions, retries) has its own file here. This file registers it.

mod cells;
mod chain;
mod clusters;
mod conn;
mod connect;
mod copy;
mod decisions;
mod drills;
mod error;
mod filter;
mod history;
mod import;
mod live;
mod live_state;
mod open;
mod portal;
mod probes;
mod reads;
mod retries;
pub mod schema;
mod session;
mod stop_reasons;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;
use crate::store::backend::{Backend, Kind};
use crate::store::interrupt::InterruptHandle;

pub(crate) use cells::Cells;
pub(crate) use chain::verify_on;
pub(crate) use conn::Pg;
pub use connect::address::{Address, is_address, with_reads};
pub use connect::hosts::Reads;
pub(crate) use decisions::{head, insert_decision, queue_retry};
pub(crate) use drills::insert_drill;
pub(crate) use error::{pg_error, pg_error_asked};
pub(crate) use filter::{PgSql, refs};
pub(crate) use live::WAL_POSITION;
pub(crate) use portal::{Portal, stream_on};
pub(crate) use probes::insert_probe;
pub(crate) use schema::objects::console_objects;
pub(crate) use stop_reasons::Asked;
// The sqlite tests copy through these, and other backends' tests take a
// throwaway cluster from here.
#[cfg(test)]
pub(crate) use tests::copy as copy_tests;
#[cfg(test)]
pub(crate) use tests::testing;

/// A session on a database settle reads without owning its tables (a job
/// queue's, [`crate::store::jobqueue`]): connected through settle's
/// addressing and TLS, with its timeouts and read-only mode, the schema
/// left alone.
pub(crate) struct Foreign {
    pub client: postgres::Client,
    /// The database as shown (`user@host:port/db`), never a password.
    pub shown: PathBuf,
    /// Cancels the statement running on `client`.
    pub cancel: InterruptHandle,
    /// What settle asked of `client` ([`stop_reasons`]).
    pub asked: Asked,
}

/// Connects a [`Foreign`] session to the database at `path`.
pub(crate) fn foreign_session(path: &Path, read_only: bool, wait: Duration) -> Result<Foreign> {
    let mut pg = Pg::connect(&Address::parse(path)?, read_only, wait)?;
    schema::tables::configure(pg.client.get_mut(), &pg.shown, read_only, wait)?;
    Ok(Foreign {
        cancel: pg.cancel_handle(),
        asked: pg.asked.clone(),
        shown: pg.shown.clone(),
        client: pg.client.into_inner(),
    })
}

/// A PostgreSQL address (`postgres://…`, `postgresql://…`).
pub(crate) const KIND: Kind = Kind {
    claims: is_address,
    create: |path| Ok(Box::new(Pg::create(&Address::parse(path)?)?)),
    create_if_absent: |path| {
        // Creating refuses a database that already has the tables;
        // opening then says what is wrong, if anything.
        Ok(Pg::create(&Address::parse(path)?)
            .ok()
            .map(|db| Box::new(db) as Box<dyn Backend>))
    },
    open: |path, access, wait, progress| {
        let address = Address::parse(path)?;
        let (db, report) = Pg::open_waiting(&address, access, wait, progress)?;
        Ok((Box::new(db), report))
    },
};

/// PostgreSQL offers every optional part of the contract but a read model
/// to catch up (its own is kept current as it is written).
impl Backend for Pg {
    fn retries(&mut self) -> Option<&mut dyn crate::store::backend::Retries> {
        Some(self)
    }

    fn importer(&mut self) -> Option<&mut dyn crate::store::backend::Import> {
        Some(self)
    }

    fn transfer(&self) -> Option<&dyn crate::store::backend::Transfer> {
        Some(self)
    }

    fn transfer_mut(&mut self) -> Option<&mut dyn crate::store::backend::Transfer> {
        Some(self)
    }
}
