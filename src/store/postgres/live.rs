//! Live updates from a PostgreSQL ledger: the watching connection LISTENs on
//! the channel the adoption's triggers NOTIFY, and [`Pg::heard_version`]
//! counts what it heard, so the console's watcher asks nothing of the
//! server while nothing happens. A lost connection is an error until a
//! reconnection (with backoff) succeeds. Never blocks waiting for a notice.

use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;

use super::conn::Pg;
use super::error::failure;
use super::heard::{Down, Live};
use super::{objects, schema};
use crate::error::{Error, Fault, Result};

/// The first wait before reconnecting, doubled after each failure up to
/// [`MOST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MOST_BACKOFF: Duration = Duration::from_secs(30);
/// How long a reconnection may take: it runs on the console's thread.
const CONNECT_WAIT: Duration = Duration::from_secs(2);
/// A connection whose server vanished without closing it (a cable, a
/// failover) hears nothing; a ping this often tells silence from death.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_WAIT: Duration = Duration::from_secs(2);

impl Pg {
    /// The ledger's data version: the number of notices heard on
    /// `settle_ledger` (and reconnections, after which anything may have
    /// changed). An error while the connection is lost; each call past the
    /// backoff tries to reconnect.
    pub(super) fn heard_version(&self) -> Result<i64> {
        let now = Instant::now();
        let mut live = self.live.borrow_mut();
        if let Some(down) = live.down.as_mut() {
            if now < down.retry_at {
                return Err(self.lost(&down.why));
            }
            if let Err(e) = self.reconnect() {
                down.backoff = (down.backoff * 2).min(MOST_BACKOFF);
                down.retry_at = now + down.backoff;
                down.why = e.to_string();
                return Err(self.lost(&down.why));
            }
            live.down = None;
            live.listening = false;
            live.heard += 1;
        }
        match self
            .hear(&mut live, now)
            .and_then(|()| self.triggers_installed(&mut live, now))
        {
            Ok(true) => Ok(live.heard),
            Ok(false) => Err(failure(
                &self.shown,
                "listening for changes",
                "the ledger has no change notifications until it is adopted \
                 (`settle adopt`, or open it writable)",
                Fault::Other,
            )),
            Err(why) => {
                let e = self.lost(&why);
                live.down = Some(Down {
                    why,
                    retry_at: now + FIRST_BACKOFF,
                    backoff: FIRST_BACKOFF,
                });
                Err(e)
            }
        }
    }

    /// LISTENs once, then takes the notices the connection has buffered or
    /// that wait on its socket, without waiting for more.
    fn hear(&self, live: &mut Live, now: Instant) -> std::result::Result<(), String> {
        let mut client = self.client.borrow_mut();
        if !live.listening {
            client
                .batch_execute(&format!("LISTEN {}", objects::CHANNEL))
                .map_err(said)?;
            live.listening = true;
            live.pinged_at = now;
        }
        let mut heard = 0;
        {
            let mut notices = client.notifications();
            let mut waiting = notices.iter();
            while waiting.next().map_err(said)?.is_some() {
                heard += 1;
            }
        }
        live.heard += heard;
        if client.is_closed() {
            return Err("the server closed the connection".to_string());
        }
        if heard == 0 && now >= live.pinged_at + PING_EVERY {
            live.pinged_at = now;
            client.is_valid(PING_WAIT).map_err(said)?;
        }
        Ok(())
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

    /// Whether the NOTIFY triggers exist; looked for again every
    /// [`PING_EVERY`] until they do (another process may adopt the ledger).
    /// Once there, they stay: dropping one is an edit a repair reports.
    fn triggers_installed(
        &self,
        live: &mut Live,
        now: Instant,
    ) -> std::result::Result<bool, String> {
        if live.notifying || now < live.look_for_triggers_at {
            return Ok(live.notifying);
        }
        live.look_for_triggers_at = now + PING_EVERY;
        let names: Vec<String> = objects::NOTIFYING_TABLES
            .iter()
            .map(|t| format!("settle_notify_{t}"))
            .collect();
        let found: i64 = self
            .client
            .borrow_mut()
            .query_one(
                "SELECT count(*) FROM pg_trigger WHERE tgname = ANY($1)",
                &[&names],
            )
            .and_then(|row| row.try_get(0))
            .map_err(said)?;
        live.notifying = found == names.len() as i64;
        if live.notifying {
            // What was written before the triggers existed was not heard.
            live.heard += 1;
        }
        Ok(live.notifying)
    }

    /// A new connection in place of the lost one, set up as the first was
    /// (timeouts, a READ ONLY session for a read-only ledger; it LISTENs
    /// again on the next [`Pg::heard_version`]). Every reconnection in the
    /// backend goes through here, so none loses the session's settings.
    /// A new connection, set up as the first, when the server closed this
    /// one (a restart, a failover, an idle timeout): every read starts
    /// here, so the console's reread after "live again" does not fail on
    /// the reader's dead connection.
    pub(super) fn fresh(&self) -> Result<()> {
        if self.client.borrow().is_closed() {
            self.reconnect()?;
        }
        self.catch_up()
    }

    pub(super) fn reconnect(&self) -> Result<()> {
        let mut client = self.connect_reader(CONNECT_WAIT)?;
        schema::configure(&mut client, &self.shown, self.read_only, self.wait)?;
        *self.client.borrow_mut() = client;
        // Held by data_version when it is the one reconnecting; it resets
        // the flag itself then.
        if let Ok(mut live) = self.live.try_borrow_mut() {
            live.listening = false;
        }
        Ok(())
    }

    fn lost(&self, why: &str) -> Error {
        failure(
            &self.shown,
            "listening for changes (reconnecting)",
            why,
            Fault::Lost,
        )
    }

    /// Reads again which of settle's tables the database holds.
    pub(super) fn inspect_again(&mut self) -> Result<()> {
        let found = schema::inspect(self.client.get_mut(), &self.shown)?;
        self.tables = found.tables();
        Ok(())
    }
}

/// The server's own words when it sent some (why it ended the session).
fn said(e: postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}
