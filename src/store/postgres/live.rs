//! Live updates from a PostgreSQL ledger without anything on the service's
//! path: a thread of the watching ledger asks the server for its WAL
//! positions (every [`ASK_EVERY`]; [`WAL_POSITION`]), which move with
//! every commit there is, and [`Pg::heard_version`] reports what it last heard without
//! ever waiting on the network. No trigger and no NOTIFY: a transaction
//! that notified takes a database-wide lock at commit, which serialised
//! the service's committers. The position is the whole server's, so a
//! commit to another database on it rereads the screen too; that costs a
//! page read, never a wrong screen. A lost connection is an error until a
//! reconnection (with backoff) succeeds; a server that stops answering
//! (a cable, a failover) is lost after [`SILENT_FOR`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::conn::Pg;
use super::connect::Address;
use super::connect::Tls;
use super::error::failure;
use super::live_state::{Heard, Watcher};
use super::schema::tables;
use crate::error::{Error, Fault, Result};

/// How often the watching thread asks: a commit reaches the screen within
/// this, the console's poll and a page read.
const ASK_EVERY: Duration = Duration::from_millis(50);
/// The first wait before reconnecting, doubled after each failure up to
/// [`MOST_BACKOFF`]: short, so a console finds a promoted standby within
/// seconds of a failover.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MOST_BACKOFF: Duration = Duration::from_secs(5);
/// How long a reconnection may take.
const CONNECT_WAIT: Duration = Duration::from_secs(2);
/// A server that has not answered for this long is not live, though its
/// connection never closed.
const SILENT_FOR: Duration = Duration::from_secs(3);

/// The server's WAL positions as one number that moves when either moves:
/// on a primary where the last record was inserted (a commit's record is
/// there before its rows are visible, and with `synchronous_commit = off`
/// the rows are visible long before it is flushed) plus where the WAL is
/// flushed (a synchronous commit is visible right after), so both kinds of
/// commit move it once they are visible; on a standby how far it replayed.
pub(crate) const WAL_POSITION: &str = "SELECT CASE WHEN pg_is_in_recovery() \
     THEN (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0'::pg_lsn)::bigint \
     ELSE ((pg_current_wal_insert_lsn() - '0/0'::pg_lsn) \
         + (pg_current_wal_flush_lsn() - '0/0'::pg_lsn))::bigint END";

/// What the watching thread needs to connect as the ledger did.
struct Dial {
    address: Address,
    tls: Tls,
    shown: PathBuf,
    read_only: bool,
    wait: Duration,
}

impl Dial {
    fn connect(&self) -> Result<postgres::Client> {
        // The host the reads go to: its WAL position is what they see.
        let (mut client, _) = self.address.connect_as(
            &self.tls,
            self.address.reader_attrs(),
            Some(CONNECT_WAIT),
            "watching for changes",
        )?;
        tables::configure(&mut client, &self.shown, self.read_only, self.wait)?;
        Ok(client)
    }
}

impl Pg {
    /// The ledger's data version: it moves whenever the server's WAL moved
    /// (and once more on the next ask, for a commit whose WAL record is
    /// there a moment before its rows are visible), and after a reconnection, after
    /// which anything may have changed. An error while the connection is
    /// lost or the server is silent. The first call starts the watching
    /// thread and never waits for it: 0 until its first answer, which then
    /// counts as a change (one reread, after the first frame).
    pub(super) fn heard_version(&self) -> Result<i64> {
        let heard = {
            let mut live = self.live.borrow_mut();
            let watcher = live.watcher.get_or_insert_with(|| self.watch());
            Arc::clone(&watcher.heard)
        };
        let heard = heard.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(why) = &heard.down {
            return Err(self.lost(why));
        }
        if heard.answered_at.elapsed() > SILENT_FOR {
            return Err(self.lost(&format!(
                "the server has not answered for {} s",
                SILENT_FOR.as_secs()
            )));
        }
        Ok(heard.version)
    }

    /// Starts the watching thread on a connection of its own.
    fn watch(&self) -> Watcher {
        let heard = Arc::new(Mutex::new(Heard {
            version: 0,
            answered_at: Instant::now(),
            down: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let dial = self.dial();
        let (shared, stopped) = (Arc::clone(&heard), Arc::clone(&stop));
        std::thread::spawn(move || ask_until_stopped(&dial, &shared, &stopped));
        Watcher { heard, stop }
    }

    /// Runs a read, and once more on a new connection when the server had
    /// closed this one (a restart, a failover, an idle timeout): after the
    /// watcher says live again the console rereads its screen through the
    /// reader's connection, which died too. Reads only: a read retried
    /// cannot do anything twice, a write could.
    #[cfg(test)]
    pub(super) fn read_reconnecting<T>(
        &self,
        doing: &str,
        mut read: impl FnMut(&mut postgres::Client) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        self.asked.read_begins();
        if self.client.borrow().is_closed() {
            self.reconnect()?;
        }
        let first = read(&mut self.client.borrow_mut());
        match first {
            Err(_) if self.client.borrow().is_closed() => {
                self.reconnect()?;
                read(&mut self.client.borrow_mut()).map_err(|e| self.err(doing, e))
            }
            other => other.map_err(|e| self.err(doing, e)),
        }
    }

    /// A new connection, set up as the first, when the server closed this
    /// one (a restart, a failover, an idle timeout): every read starts
    /// here, so the console's reread after "live again" does not fail on
    /// the reader's dead connection.
    pub(super) fn fresh(&self) -> Result<()> {
        self.asked.read_begins();
        if self.client.borrow().is_closed() {
            self.reconnect()?;
        }
        self.catch_up()
    }

    /// A new connection in place of the lost one, set up as the first was
    /// (timeouts, a READ ONLY session for a read-only ledger). Every
    /// reconnection in the backend, the watching thread's too, goes
    /// through [`Dial::connect`], so none loses the session's settings.
    pub(super) fn reconnect(&self) -> Result<()> {
        let mut client = self.connect_reader(CONNECT_WAIT)?;
        tables::configure(&mut client, &self.shown, self.read_only, self.wait)?;
        *self.client.borrow_mut() = client;
        Ok(())
    }

    fn dial(&self) -> Dial {
        Dial {
            address: self.address.clone(),
            tls: self.tls.clone(),
            shown: self.shown.clone(),
            read_only: self.read_only,
            wait: self.wait,
        }
    }

    fn lost(&self, why: &str) -> Error {
        failure(
            &self.shown,
            "watching for changes (reconnecting)",
            why,
            Fault::Lost,
        )
    }

    /// Reads again which of settle's tables the database holds.
    pub(super) fn inspect_again(&mut self) -> Result<()> {
        let found = tables::inspect(self.client.get_mut(), &self.shown)?;
        self.tables = found.tables();
        self.events = found.events();
        self.queue = found.queue;
        Ok(())
    }
}

/// Asks the server's WAL position every [`ASK_EVERY`] until the ledger is
/// dropped, reconnecting with backoff when the connection is lost.
fn ask_until_stopped(dial: &Dial, heard: &Mutex<Heard>, stop: &AtomicBool) {
    let mut client: Option<postgres::Client> = None;
    let mut last: Option<i64> = None;
    let mut recheck = false;
    let mut backoff = FIRST_BACKOFF;
    while !stop.load(Ordering::Relaxed) {
        let answer = match client.as_mut() {
            Some(c) => c
                .query_one(WAL_POSITION, &[])
                .and_then(|row| row.try_get::<_, i64>(0))
                .map_err(said),
            None => match dial.connect() {
                Ok(c) => {
                    client = Some(c);
                    backoff = FIRST_BACKOFF;
                    // Anything may have changed while nobody asked.
                    last = None;
                    continue;
                }
                Err(e) => Err(e.to_string()),
            },
        };
        let mut h = heard.lock().unwrap_or_else(PoisonError::into_inner);
        match answer {
            Ok(position) => {
                if last != Some(position) || recheck {
                    h.version += 1;
                    recheck = last != Some(position);
                    last = Some(position);
                }
                h.answered_at = Instant::now();
                h.down = None;
                drop(h);
                pause(ASK_EVERY, stop);
            }
            Err(why) => {
                let reconnecting = client.take().is_some();
                h.down = Some(why);
                drop(h);
                if !reconnecting {
                    pause(backoff, stop);
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                }
            }
        }
    }
}

/// Sleeps `how_long`, waking early when the ledger is dropped.
fn pause(how_long: Duration, stop: &AtomicBool) {
    let until = Instant::now() + how_long;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(ASK_EVERY.min(until - Instant::now()));
    }
}

/// The server's own words when it sent some (why it ended the session).
fn said(e: postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}
