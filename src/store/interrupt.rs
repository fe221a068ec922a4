//! Stopping a running read from another thread, whichever database runs it.

/// What a backend hands out to stop the statement running on one of its
/// connections; each backend implements it over its own driver's handle.
pub(crate) trait Interrupt: Send + Sync {
    /// Cancels the statement running now, if any; the next one runs as
    /// usual. Best effort: a cancel that cannot be delivered is dropped.
    fn interrupt(&self);
}

/// Stops the read running on one ledger connection from another thread
/// ([`crate::store::Ledger::interrupt_handle`]). Its own type, so callers
/// never see which database library is underneath.
pub struct InterruptHandle(Box<dyn Interrupt>);

impl InterruptHandle {
    pub(crate) fn new(handle: impl Interrupt + 'static) -> InterruptHandle {
        InterruptHandle(Box::new(handle))
    }

    /// Cancels the statement running now, if any; the next one runs as usual.
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}

/// An [`Interrupt`] given at a time unless the call that armed it ends
/// first: a connection that stopped answering (a network that drops
/// packets, a middlebox that holds them) would otherwise hold the call,
/// and the screen, forever, since the client library has no timeout of
/// its own for a reply. One thread of the process watches every armed
/// deadline; disarmed by dropping it.
pub(crate) struct Deadline {
    id: u64,
    within: std::time::Duration,
    passed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What the watching thread holds: each armed deadline's time and what
/// it interrupts then.
struct Armed {
    next: u64,
    at: std::collections::BTreeMap<u64, Entry>,
    watching: bool,
}

/// One armed deadline: when, what it interrupts, and where it says it
/// passed.
struct Entry {
    at: std::time::Instant,
    then: Box<dyn Interrupt>,
    passed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

static ARMED: std::sync::Mutex<Armed> = std::sync::Mutex::new(Armed {
    next: 0,
    at: std::collections::BTreeMap::new(),
    watching: false,
});
static WOKEN: std::sync::Condvar = std::sync::Condvar::new();

fn armed() -> std::sync::MutexGuard<'static, Armed> {
    ARMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Deadline {
    /// `then` interrupted once `within` has passed without the call
    /// ending (or, for a call that streams, without [`Deadline::progress`]).
    pub(crate) fn arm(within: std::time::Duration, then: impl Interrupt + 'static) -> Deadline {
        let mut armed = armed();
        let id = armed.next;
        armed.next += 1;
        let passed = std::sync::Arc::default();
        let entry = Entry {
            at: std::time::Instant::now() + within,
            then: Box::new(then),
            passed: std::sync::Arc::clone(&passed),
        };
        armed.at.insert(id, entry);
        if !armed.watching {
            armed.watching = std::thread::Builder::new()
                .name("settle-deadlines".into())
                .spawn(watch)
                .is_ok();
        }
        drop(armed);
        WOKEN.notify_all();
        Deadline { id, within, passed }
    }

    /// The call made progress (a row came): its time starts again.
    pub(crate) fn progress(&self) {
        if let Some(entry) = armed().at.get_mut(&self.id) {
            entry.at = std::time::Instant::now() + self.within;
        }
    }

    /// How long the call may wait.
    pub(crate) fn within(&self) -> std::time::Duration {
        self.within
    }

    /// Whether it passed and interrupted the call.
    pub(crate) fn passed(&self) -> bool {
        self.passed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        armed().at.remove(&self.id);
    }
}

/// The watching thread: sleeps until the nearest deadline, interrupts
/// what passed it (outside the lock: an interrupt may take a moment).
fn watch() {
    let mut guard = armed();
    loop {
        let now = std::time::Instant::now();
        let passed: Vec<u64> = guard
            .at
            .iter()
            .filter(|(_, entry)| entry.at <= now)
            .map(|(id, _)| *id)
            .collect();
        let due: Vec<Entry> = passed.iter().filter_map(|id| guard.at.remove(id)).collect();
        if !due.is_empty() {
            drop(guard);
            for entry in &due {
                entry
                    .passed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                entry.then.interrupt();
            }
            guard = armed();
            continue;
        }
        let nearest = guard.at.values().map(|entry| entry.at).min();
        guard = match nearest {
            Some(at) => {
                WOKEN
                    .wait_timeout(guard, at.saturating_duration_since(now))
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0
            }
            None => WOKEN
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    struct Count(Arc<AtomicUsize>);

    impl Interrupt for Count {
        fn interrupt(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_deadline_interrupts_once_when_passed_and_never_once_dropped() {
        let passed = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let armed = Deadline::arm(Duration::from_millis(20), Count(passed.clone()));
        drop(Deadline::arm(
            Duration::from_millis(20),
            Count(dropped.clone()),
        ));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(passed.load(Ordering::SeqCst), 1);
        assert!(armed.passed());
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn progress_puts_the_deadline_off() {
        let passed = Arc::new(AtomicUsize::new(0));
        let armed = Deadline::arm(Duration::from_millis(150), Count(passed.clone()));
        for _ in 0..6 {
            std::thread::sleep(Duration::from_millis(50));
            armed.progress();
        }
        assert_eq!(passed.load(Ordering::SeqCst), 0);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(passed.load(Ordering::SeqCst), 1);
    }
}
