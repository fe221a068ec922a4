//! Reads from a standby, writes to the primary. Given an address that lists
//! a primary and its standbys, the ledger's reading connection
//! ([`Pg::client`]) goes to a standby when one answers (`reads=auto`, the
//! default, or `standby`), and every write goes to the primary on a
//! connection of its own, opened at the first write. A write with no
//! primary reachable is refused before anything is sent
//! ([`Error::NoPrimary`]). After a decision of this process, a read waits
//! briefly for the standby to replay it; a standby that lags past that is
//! set aside and reads go to the primary until it has.

use std::time::{Duration, Instant};

use postgres::Client;

use super::hosts::SessionAttrs;
use super::writes::{Writes, written};
use crate::error::{Error, Result};
use crate::store::postgres::conn::Pg;
use crate::store::postgres::schema::tables;

/// How long a read after this process's own write waits for the standby
/// to replay it before reading from the primary instead.
const CATCH_UP: Duration = Duration::from_millis(500);
const CATCH_UP_POLL: Duration = Duration::from_millis(10);
/// How often a write waiting for a primary looks again.
const PRIMARY_RETRY: Duration = Duration::from_millis(250);
/// How long finding a primary may take per host.
const PRIMARY_WAIT: Duration = Duration::from_secs(3);

impl Pg {
    /// The connection every write uses: the primary's, found now when
    /// there is none (the reading connection on a one-host address).
    pub(crate) fn writer(&mut self) -> Result<&mut Client> {
        // A reading connection that was the primary's and came back on a
        // standby (the primary failed, the reader reconnected): the
        // primary is elsewhere now.
        if self.reader_in_recovery.get() && !matches!(self.writes.get_mut(), Writes::Own(_)) {
            *self.writes.get_mut() = Writes::Own(None);
        }
        if self.writer_closed() {
            self.reconnect_writer(self.wait)?;
        }
        if matches!(self.writes.get_mut(), Writes::Own(None)) {
            return Err(self.no_primary());
        }
        match self.writes.get_mut() {
            Writes::Own(Some(client)) => Ok(client),
            _ => Ok(self.client.get_mut()),
        }
    }

    /// Why a write would not go through now: the writes' connection is
    /// asked (an empty statement), and found again when it broke, so a
    /// primary that went away is seen within a look, and one promoted
    /// since the last.
    pub(crate) fn primary_gone(&mut self) -> Option<String> {
        if self.read_only {
            return None;
        }
        let answers = match self.writes.get_mut() {
            Writes::Own(Some(client)) => client.batch_execute("").is_ok(),
            Writes::Own(None) => false,
            Writes::Reader | Writes::Lagging { .. } => {
                self.client.get_mut().batch_execute("").is_ok()
            }
        };
        if !answers && self.reconnect_writer(Duration::ZERO).is_err() {
            // No host took the reading connection either.
            self.no_primary.set(true);
        }
        self.no_primary
            .get()
            .then(|| "no primary reachable".to_string())
    }

    /// Whether the writes' connection is missing or broken.
    pub(crate) fn writer_closed(&mut self) -> bool {
        match self.writes.get_mut() {
            Writes::Own(slot) => slot.as_ref().is_none_or(Client::is_closed),
            Writes::Reader | Writes::Lagging { .. } => self.client.get_mut().is_closed(),
        }
    }

    /// A new connection for writes in place of a broken one; with no
    /// primary reachable, tried again for up to `wait` (a failover under
    /// way: `decide --wait` carries on once a standby is promoted).
    pub(crate) fn reconnect_writer(&mut self, wait: Duration) -> Result<()> {
        if matches!(self.writes.get_mut(), Writes::Reader) {
            self.reconnect()?;
            if !self.reader_in_recovery.get() {
                self.no_primary.set(false);
                return Ok(());
            }
            // The reconnection found a standby: the primary is elsewhere.
            *self.writes.get_mut() = Writes::Own(None);
        }
        if let Writes::Lagging { .. } = self.writes.get_mut() {
            // The primary's connection broke while it stood in for the
            // standby: reads go back to the standby.
            if let Writes::Lagging { standby, .. } =
                std::mem::replace(self.writes.get_mut(), Writes::Own(None))
            {
                *self.client.get_mut() = standby;
                self.reader_in_recovery.set(true);
            }
        }
        let until = Instant::now() + wait;
        let found = loop {
            match self.connect_primary() {
                Some(client) => break Some(client),
                None if Instant::now() >= until => break None,
                None => std::thread::sleep(PRIMARY_RETRY),
            }
        };
        self.no_primary.set(found.is_none());
        *self.writes.get_mut() = Writes::Own(found);
        Ok(())
    }

    /// A session on the primary, set up for writing; None when no host of
    /// the address is one.
    pub(crate) fn connect_primary(&self) -> Option<Client> {
        let (mut client, _) = self
            .address
            .connect_as(
                &self.tls,
                SessionAttrs::Primary,
                Some(PRIMARY_WAIT),
                "connecting to the primary",
            )
            .ok()?;
        tables::configure(&mut client, &self.shown, self.read_only, self.wait).ok()?;
        Some(client)
    }

    pub(crate) fn no_primary(&self) -> Error {
        self.no_primary.set(true);
        Error::NoPrimary {
            path: self.shown.clone(),
        }
    }

    /// Before a read: when a ledger of this process committed a decision
    /// since this one last read (the console writes on one connection and
    /// reads on another), waits up to [`CATCH_UP`] for the standby to
    /// replay the primary's WAL as of now; past that, reads go to the
    /// primary until the standby has. Says which in [`Pg::routed`].
    pub(crate) fn catch_up(&self) -> Result<()> {
        let now = written();
        let written = self.seen.replace(now) != now;
        let mut writes = self.writes.borrow_mut();
        if written {
            if let Writes::Lagging { lsn, .. } = &mut *writes {
                // Reads are on the primary already: wait for the newest.
                if let Ok(newest) = current_lsn(&mut self.client.borrow_mut()) {
                    *lsn = newest;
                }
            } else if self.reader_in_recovery.get() {
                self.wait_for_replay(&mut writes);
                return Ok(());
            }
        }
        let back = match &mut *writes {
            Writes::Lagging { standby, lsn } => replayed(standby, lsn).unwrap_or(false),
            _ => false,
        };
        if back
            && let Writes::Lagging { standby, .. } =
                std::mem::replace(&mut *writes, Writes::Own(None))
        {
            let primary = std::mem::replace(&mut *self.client.borrow_mut(), standby);
            self.reader_in_recovery.set(true);
            *writes = Writes::Own(Some(primary));
            *self.routed.borrow_mut() = Some("standby caught up: reads from it again".into());
        }
        Ok(())
    }

    /// The standby given [`CATCH_UP`] to reach the primary's WAL position,
    /// else set aside for the primary (opened now if this ledger never
    /// wrote). Nothing to wait for without a primary.
    fn wait_for_replay(&self, writes: &mut Writes) {
        if let Writes::Own(slot @ None) = writes {
            *slot = self.connect_primary();
        }
        let Writes::Own(Some(primary)) = writes else {
            return;
        };
        let Ok(lsn) = current_lsn(primary) else {
            return;
        };
        let started = Instant::now();
        let mut reader = self.client.borrow_mut();
        while started.elapsed() < CATCH_UP {
            if replayed(&mut reader, &lsn).unwrap_or(true) {
                *self.routed.borrow_mut() = Some(format!(
                    "standby caught up in {} ms: read from it",
                    started.elapsed().as_millis()
                ));
                return;
            }
            std::thread::sleep(CATCH_UP_POLL);
        }
        if let Writes::Own(Some(primary)) = std::mem::replace(writes, Writes::Own(None)) {
            let standby = std::mem::replace(&mut *reader, primary);
            self.reader_in_recovery.set(false);
            *writes = Writes::Lagging { standby, lsn };
            *self.routed.borrow_mut() = Some(format!(
                "read from the primary: the standby had not replayed the decision after {} ms",
                CATCH_UP.as_millis()
            ));
        }
    }
}

fn current_lsn(client: &mut Client) -> std::result::Result<String, postgres::Error> {
    client
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .and_then(|r| r.try_get(0))
}

/// Whether the server has replayed WAL up to `lsn` (a primary has it all).
fn replayed(client: &mut Client, lsn: &str) -> std::result::Result<bool, postgres::Error> {
    client
        .query_one(
            "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
            &[&lsn],
        )
        .and_then(|r| r.try_get(0))
}
