//! What the watching thread of a PostgreSQL ledger last learnt, shared
//! between it ([`super::live`]) and the connection that reports it
//! ([`super::conn::Pg`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The watching thread's answers, read by `data_version`.
#[derive(Debug)]
pub(super) struct Heard {
    /// Moves whenever the server's WAL moved, and after a reconnection.
    pub(super) version: i64,
    /// When the server last answered.
    pub(super) answered_at: Instant,
    /// Why the server cannot be asked now, while the thread reconnects.
    pub(super) down: Option<String>,
}

/// The watching thread, started by the first `data_version`; it stops
/// when this is dropped (with the ledger).
#[derive(Debug)]
pub(super) struct Watcher {
    pub(super) heard: Arc<Mutex<Heard>>,
    pub(super) stop: Arc<AtomicBool>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The watching thread of a ledger, once a watcher asked.
#[derive(Debug, Default)]
pub(super) struct Live {
    pub(super) watcher: Option<Watcher>,
}
