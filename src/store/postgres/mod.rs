//! The PostgreSQL backend of the ledger: the same contract, rules and
//! guarantees as [`super::sqlite`], on the database services that write from
//! many machines already use. Only [`crate::store::Ledger`] calls it,
//! through [`crate::store::backend`]. The connection is [`conn::Pg`];
//! addressing, schema, reads and writes each have their own file. This file
//! registers it.

mod address;
mod adopt;
#[cfg(test)]
mod adopt_tests;
mod asked;
mod cells;
mod chain;
mod clusters;
mod conn;
mod conninfo;
mod contract;
mod copy;
mod copy_defer;
mod copy_in;
mod copy_move;
mod copy_staged;
#[cfg(test)]
pub(crate) mod copy_tests;
mod decide;
#[cfg(test)]
mod decide_tests;
mod drills;
mod error;
mod event_ops;
#[cfg(test)]
mod event_ops_tests;
mod filter;
mod heard;
mod history;
mod hosts;
mod import;
#[cfg(test)]
mod libpq_tests;
mod live;
mod objects;
mod open;
mod pgpass;
mod portal;
mod probes;
mod queue;
#[cfg(test)]
mod queue_tests;
mod read;
#[cfg(test)]
mod read_tests;
mod retries;
mod routing;
#[cfg(test)]
mod routing_tests;
#[cfg(test)]
mod same_contract;
pub mod schema;
mod service_file;
#[cfg(test)]
mod stop_tests;
#[cfg(test)]
pub mod testing;
#[cfg(test)]
pub mod testing_bed;
#[cfg(test)]
mod tests;
mod tls;
#[cfg(test)]
mod tls_tests;
mod writes;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;
use crate::store::backend::{Backend, Kind};
use crate::store::interrupt::InterruptHandle;

pub use address::{Address, is_address, with_reads};
pub(crate) use asked::Asked;
pub(crate) use cells::Cells;
pub(crate) use chain::verify_on;
pub(crate) use conn::Pg;
pub(crate) use decide::{head, insert_decision, queue_retry};
pub(crate) use drills::insert_drill;
pub(crate) use error::{pg_error, pg_error_asked};
pub(crate) use filter::{PgSql, refs};
pub use hosts::Reads;
pub(crate) use live::WAL_POSITION;
pub(crate) use objects::console_objects;
pub(crate) use portal::{Portal, stream_on};
pub(crate) use probes::insert_probe;

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
    /// What settle asked of `client` ([`asked`]).
    pub asked: Asked,
}

/// Connects a [`Foreign`] session to the database at `path`.
pub(crate) fn foreign_session(path: &Path, read_only: bool, wait: Duration) -> Result<Foreign> {
    let mut pg = Pg::connect(&Address::parse(path)?, read_only, wait)?;
    schema::configure(pg.client.get_mut(), &pg.shown, read_only, wait)?;
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
