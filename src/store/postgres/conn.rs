//! The PostgreSQL ledger's connection, [`Pg`]: what every file of the
//! backend works on. A password never leaves the address: everything shown
//! names the ledger as `user@host:port/db`.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::time::Duration;

use postgres::Client;

use super::connect::Address;
use super::connect::Tls;
use super::connect::Writes;
use super::error::pg_error_asked;
use super::live_state::Live;
use super::schema::event_ops::Events;
use super::stop_reasons::Asked;
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::interrupt::{Interrupt, InterruptHandle};
use crate::store::tables::Tables;

/// An open PostgreSQL ledger.
pub struct Pg {
    /// Every read takes `&self` (as on SQLite) while the client needs
    /// `&mut`; a ledger is used by one thread at a time.
    pub(super) client: RefCell<Client>,
    pub(super) address: Address,
    /// The ledger as shown (`user@host:port/db`), for errors and the header.
    pub(super) shown: PathBuf,
    pub(super) tls: Tls,
    pub(super) read_only: bool,
    /// How long a write waits for a row lock before [`Error::Busy`].
    pub(super) wait: Duration,
    /// The console's tables exist (a read-only look at a service's database
    /// that was never adopted has none): reads of decisions need them.
    pub(super) tables: Tables,
    /// The contracts the receivers file declares.
    pub(super) declared: Declarations,
    /// How reads find an operation's events ([`super::filter`]).
    pub(super) events: Events,
    /// settle's queue table is there ([`super::schema::queue`]), and when this
    /// session last caught it up.
    pub(super) queue: bool,
    pub(super) queue_kept: Cell<Option<std::time::Instant>>,
    /// What the watching connection heard ([`super::live`]).
    pub(super) live: RefCell<Live>,
    /// Where writes go ([`super::connect::routing`]).
    pub(super) writes: RefCell<Writes>,
    /// The reading connection is on a standby.
    pub(super) reader_in_recovery: Cell<bool>,
    /// The last look found no primary (a write looks again).
    pub(super) no_primary: Cell<bool>,
    /// The decisions of this process this ledger's reads have waited for
    /// ([`Pg::catch_up`]).
    pub(super) seen: Cell<u64>,
    /// What the last read after a write read from, and why.
    pub(super) routed: RefCell<Option<String>>,
    /// The cancels settle sent the reading connection and the timeout it
    /// set there, which tell why the server stopped a read.
    pub(super) asked: Asked,
    /// Created by this process and not yet written: a copy into it may
    /// build its keys and indexes after the rows ([`super::copy::defer`]).
    pub(super) created_here: bool,
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
    /// Connects without looking at the schema: [`super::open`] does that.
    pub(super) fn connect(address: &Address, read_only: bool, wait: Duration) -> Result<Pg> {
        let tls = address.tls()?;
        // The session's timeouts and read-only mode: schema::configure,
        // run by create and open.
        let (client, role) = address.connect_as(
            &tls,
            address.reader_attrs(),
            address.timeout(),
            "connecting",
        )?;
        Ok(Pg {
            client: RefCell::new(client),
            shown: PathBuf::from(address.shown()),
            address: address.clone(),
            tls,
            read_only,
            wait,
            tables: Tables::ALL,
            declared: Declarations::default(),
            events: Events::Map,
            queue: true,
            queue_kept: Cell::new(None),
            live: RefCell::default(),
            writes: RefCell::new(if role.in_recovery {
                Writes::Own(None)
            } else {
                Writes::Reader
            }),
            reader_in_recovery: Cell::new(role.in_recovery),
            no_primary: Cell::new(false),
            seen: Cell::new(super::connect::writes::written()),
            routed: RefCell::default(),
            asked: Asked::new(),
            created_here: false,
        })
    }

    /// A new reading connection, to the kind of server the first went to,
    /// giving up after `wait` per host.
    pub(super) fn connect_reader(&self, wait: Duration) -> Result<Client> {
        let wait = self.address.timeout().map_or(wait, |t| t.min(wait));
        let (client, role) = self.address.connect_as(
            &self.tls,
            self.address.reader_attrs(),
            Some(wait),
            "reconnecting",
        )?;
        self.reader_in_recovery.set(role.in_recovery);
        Ok(client)
    }

    /// A handle another thread uses to cancel the statement running on this
    /// connection (the server's cancel request).
    pub(super) fn cancel_handle(&self) -> InterruptHandle {
        InterruptHandle::new(Cancel {
            token: self.client.borrow().cancel_token(),
            tls: self.tls.clone(),
            asked: self.asked.clone(),
        })
    }

    /// A PostgreSQL error on the reading connection said as settle's
    /// ([`pg_error_asked`]).
    pub(super) fn err(&self, doing: &str, e: postgres::Error) -> Error {
        pg_error_asked(&self.shown, doing, e, &self.asked)
    }
}

/// The server's cancel request, sent over a connection of its own.
struct Cancel {
    token: postgres::CancelToken,
    tls: Tls,
    asked: Asked,
}

impl Interrupt for Cancel {
    fn interrupt(&self) {
        // Noted before it is sent: the stop it causes may come back first.
        self.asked.cancelling();
        // Best effort, like SQLite's: a cancel that cannot reach the
        // server leaves the statement to its statement timeout. Sent from
        // a thread of its own, since the caller (the console's screen)
        // must not wait on a network that stopped answering; a cancel
        // connection held by a stall is cut with the ledger's others.
        let (token, tls) = (self.token.clone(), self.tls.clone());
        let sent = std::thread::Builder::new()
            .name("pg-cancel".into())
            .spawn(move || {
                let _ = token.cancel_query(tls);
            });
        drop(sent);
    }
}
