//! The PostgreSQL backend of the ledger: the same contract, rules and
//! guarantees as [`super::sqlite`], on the database services that write from
//! many machines already use. Only [`crate::store::Ledger`] calls it. This
//! file owns addressing and the connection; schema, reads and writes each
//! have their own file. A password never leaves this file: everything shown
//! names the ledger as `user@host:port/db`.

mod address;
mod cells;
mod chain;
mod clusters;
mod copy;
mod decide;
#[cfg(test)]
mod decide_tests;
mod filter;
mod history;
mod import;
mod live;
mod objects;
mod probes;
mod read;
#[cfg(test)]
mod read_tests;
mod retries;
#[cfg(test)]
mod same_contract;
pub mod schema;
#[cfg(test)]
pub mod testing;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use postgres::Client;
use postgres_native_tls::MakeTlsConnector;

pub use address::{Address, is_address};

use crate::error::{Error, Result};
use crate::store::interrupt::{Interrupt, InterruptHandle};
use crate::store::open::{Access, BUSY_TIMEOUT, OpenReport, Progress};
use crate::store::tables::Tables;

/// An open PostgreSQL ledger.
pub struct Pg {
    /// Every read takes `&self` (as on SQLite) while the client needs
    /// `&mut`; a ledger is used by one thread at a time.
    client: RefCell<Client>,
    address: Address,
    /// The ledger as shown (`user@host:port/db`), for errors and the header.
    shown: PathBuf,
    tls: MakeTlsConnector,
    read_only: bool,
    /// How long a write waits for a row lock before [`Error::Busy`].
    wait: Duration,
    /// The console's tables exist (a read-only look at a service's database
    /// that was never adopted has none): reads of decisions need them.
    tables: Tables,
    /// What the watching connection heard ([`live`]).
    live: RefCell<live::Live>,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg")
            .field("ledger", &self.shown)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Pg {
    /// Creates the ledger's tables in an empty database; refuses one that
    /// already holds `operations`.
    pub fn create(address: &Address) -> Result<Pg> {
        let mut pg = Pg::connect(address, false, BUSY_TIMEOUT)?;
        schema::create(&mut pg)?;
        Ok(pg)
    }

    /// Opens an existing ledger; a writable open adopts a service's tables
    /// (never a read-only one), and a newer schema is refused.
    pub fn open_waiting(
        address: &Address,
        access: Access,
        wait: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Pg, OpenReport)> {
        let mut pg = Pg::connect(address, access == Access::ReadOnly, wait)?;
        let report = schema::open(&mut pg, progress)?;
        Ok((pg, report))
    }

    fn connect(address: &Address, read_only: bool, wait: Duration) -> Result<Pg> {
        let tls = address.tls()?;
        // The session's timeouts and read-only mode: schema::configure,
        // run by create and open.
        let client = address.connect(tls.clone())?;
        Ok(Pg {
            client: RefCell::new(client),
            shown: PathBuf::from(address.shown()),
            address: address.clone(),
            tls,
            read_only,
            wait,
            tables: Tables::ALL,
            live: RefCell::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.shown
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A handle another thread uses to cancel the statement running on this
    /// connection (the server's cancel request).
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(Cancel {
            token: self.client.borrow().cancel_token(),
            tls: self.tls.clone(),
        })
    }

    /// A PostgreSQL error said as settle's: the SQLSTATE kept for callers
    /// that retry, the text sanitised (a server message may quote ledger
    /// text), a cancelled statement as [`Error::Interrupted`].
    fn err(&self, doing: &str, e: postgres::Error) -> Error {
        pg_error(&self.shown, doing, e)
    }

    fn ensure_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ledger(
                &self.shown,
                "opened read-only",
                "open it without --read-only, as a role that may write the ledger",
            ));
        }
        Ok(())
    }
}

/// The server's cancel request, sent over a connection of its own.
struct Cancel {
    token: postgres::CancelToken,
    tls: MakeTlsConnector,
}

impl Interrupt for Cancel {
    fn interrupt(&self) {
        // Best effort, like SQLite's: a cancel that cannot reach the
        // server leaves the statement to its statement timeout.
        let _ = self.token.cancel_query(self.tls.clone());
    }
}

/// [`Pg::err`] for code that has no `Pg` at hand (connecting).
pub(crate) fn pg_error(shown: &Path, doing: &str, e: postgres::Error) -> Error {
    let code = e.code().map(|c| c.code().to_string());
    let mut problem = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    if code.as_deref() == Some("57014") {
        // The same SQLSTATE for a cancel and for the statement timeout:
        // a cancel means a newer read took this one's place (dropped
        // silently), a timeout must be said, or the screen waits forever.
        if !problem.contains("statement timeout") {
            return Error::Interrupted {
                doing: doing.to_string(),
            };
        }
        problem = format!(
            "stopped after {} s (the statement timeout); narrow the filter",
            schema::STATEMENT_TIMEOUT.as_secs()
        );
    }
    Error::Postgres {
        path: shown.to_path_buf(),
        doing: doing.to_string(),
        problem: crate::text::sanitize(&problem).into_owned(),
        code,
    }
}
