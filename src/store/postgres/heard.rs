//! What the watching connection of a PostgreSQL ledger heard, kept with
//! the connection ([`super::conn::Pg`]) and read by [`super::live`].

use std::time::{Duration, Instant};

/// What the watching connection heard, and whether it is down.
#[derive(Debug)]
pub(super) struct Live {
    pub(super) listening: bool,
    /// The NOTIFY triggers are installed (an unadopted database has none,
    /// and listening to it would hear nothing while claiming to be live).
    pub(super) notifying: bool,
    /// When to look for the triggers again while they are missing.
    pub(super) look_for_triggers_at: Instant,
    pub(super) heard: i64,
    pub(super) pinged_at: Instant,
    pub(super) down: Option<Down>,
}

#[derive(Debug)]
pub(super) struct Down {
    pub(super) why: String,
    pub(super) retry_at: Instant,
    pub(super) backoff: Duration,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            listening: false,
            notifying: false,
            look_for_triggers_at: Instant::now(),
            heard: 0,
            pinged_at: Instant::now(),
            down: None,
        }
    }
}
