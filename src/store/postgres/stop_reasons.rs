//! What settle itself asked of a reading connection's statements: a
//! cancel it sent, and the statement timeout it set. PostgreSQL stops a
//! statement with one SQLSTATE (57014) for a cancel request and for the
//! statement timeout alike, and only its message text differs, in the
//! server's language; so which it was is told from settle's own record
//! ([`Asked::stopped`]), never from those words.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// No statement holds the console longer than this; adoption lifts it for
/// its index builds. `SETTLE_PG_STATEMENT_TIMEOUT_MS` lowers it (tests).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The statement timeout settle sets on its sessions.
pub(super) fn statement_timeout() -> Duration {
    std::env::var("SETTLE_PG_STATEMENT_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(STATEMENT_TIMEOUT, Duration::from_millis)
}

/// How long settle waits for a server's answer before it takes the
/// connection for stalled and cuts it ([`super::connect::stalls`]): past
/// the statement timeout, which stops any read the server got, with room
/// for the reply. `SETTLE_PG_STALL_MS` sets it (tests).
pub(super) fn stall_bound() -> Duration {
    std::env::var("SETTLE_PG_STALL_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(
            statement_timeout() + Duration::from_secs(30),
            Duration::from_millis,
        )
}

/// Why the server stopped a statement of this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// settle sent a cancel: a newer read took this one's place.
    ByUs,
    /// The read ran at least as long as the statement timeout settle set.
    Timeout(Duration),
    /// Neither: someone else's cancel request (`pg_cancel_backend`, an
    /// administrator), after this long.
    Outside(Duration),
}

/// The record of one connection, shared with its cancel handle (another
/// thread sends cancels).
#[derive(Debug, Clone)]
pub(crate) struct Asked(Arc<Record>);

#[derive(Debug)]
struct Record {
    /// A cancel went out since the read began.
    cancel_sent: AtomicBool,
    read: Mutex<Read>,
}

/// The read under way.
#[derive(Debug, Clone, Copy)]
struct Read {
    began: Instant,
    /// The statement timeout in force, `None` where a read lifted it.
    timeout: Option<Duration>,
    /// The session's statement timeout, in force again at each read.
    session: Duration,
}

impl Asked {
    /// A connection set up with the session's statement timeout.
    pub(crate) fn new() -> Asked {
        Asked(Arc::new(Record {
            cancel_sent: AtomicBool::new(false),
            read: Mutex::new(Read {
                began: Instant::now(),
                timeout: Some(statement_timeout()),
                session: statement_timeout(),
            }),
        }))
    }

    /// A read begins: a cancel sent before it was meant for an earlier
    /// one (the server drops a cancel that finds nothing running), and the
    /// session's timeout is in force again.
    pub(crate) fn read_begins(&self) {
        self.0.cancel_sent.store(false, Ordering::SeqCst);
        let mut read = self.read();
        read.began = Instant::now();
        read.timeout = Some(read.session);
    }

    /// The read under way lifted the statement timeout (a whole list).
    pub(crate) fn untimed(&self) {
        self.read().timeout = None;
    }

    /// settle is about to send a cancel for the statement running now.
    pub(crate) fn cancelling(&self) {
        self.0.cancel_sent.store(true, Ordering::SeqCst);
    }

    /// Why the server stopped the read under way: settle's cancel if it
    /// sent one (taken, so it explains one stop only), else the timeout
    /// if the read lasted that long, else a cancel from outside.
    pub(crate) fn stopped(&self) -> Stopped {
        if self.0.cancel_sent.swap(false, Ordering::SeqCst) {
            return Stopped::ByUs;
        }
        let read = *self.read();
        let lasted = read.began.elapsed();
        match read.timeout {
            Some(timeout) if lasted >= timeout => Stopped::Timeout(timeout),
            _ => Stopped::Outside(lasted),
        }
    }

    /// Records that the session's statement timeout is now `timeout`
    /// (a test's short one).
    #[cfg(test)]
    pub(crate) fn timed(&self, timeout: Duration) {
        let mut read = self.read();
        read.session = timeout;
        read.timeout = Some(timeout);
    }

    fn read(&self) -> std::sync::MutexGuard<'_, Read> {
        self.0.read.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_explains_one_stop_of_the_read_it_was_sent_during() {
        let asked = Asked::new();
        asked.read_begins();
        asked.cancelling();
        assert_eq!(asked.stopped(), Stopped::ByUs);
        assert!(matches!(asked.stopped(), Stopped::Outside(_)));
    }

    #[test]
    fn a_cancel_sent_before_a_read_began_is_not_taken_for_its_stop() {
        let asked = Asked::new();
        asked.cancelling();
        asked.read_begins();
        asked.timed(Duration::ZERO);
        assert_eq!(asked.stopped(), Stopped::Timeout(Duration::ZERO));
    }

    #[test]
    fn a_read_that_lifted_the_timeout_was_stopped_from_outside() {
        let asked = Asked::new();
        asked.read_begins();
        asked.timed(Duration::ZERO);
        asked.untimed();
        assert!(matches!(asked.stopped(), Stopped::Outside(_)));
    }
}
