//! Holds the console's other connections back until its first page is on
//! the screen: a server's connection costs a round trip and a backend
//! process, and the operator waits for the page, not for the writer, the
//! counter or the watcher. The shell opens the gate after drawing the first
//! page; the workers waiting on it then open theirs.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// A worker waits at most this long: a first page that takes longer (a
/// slow server, a filter scanned) does not hold back the counts for good.
const MOST: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    /// A gate already open: nothing waits (the tests' workers).
    #[cfg(test)]
    pub fn open_now() -> Gate {
        let gate = Gate::default();
        gate.open();
        gate
    }

    /// Lets every worker waiting through, and any that comes later.
    pub fn open(&self) {
        let (open, changed) = &*self.0;
        *open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        changed.notify_all();
    }

    /// Returns once the gate is open, or after [`MOST`].
    pub fn wait(&self) {
        let (open, changed) = &*self.0;
        let guard = open.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = changed
            .wait_timeout_while(guard, MOST, |open| !*open)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_worker_waits_until_the_gate_opens() {
        let gate = Gate::default();
        let waiting = gate.clone();
        let worker = std::thread::spawn(move || {
            let started = Instant::now();
            waiting.wait();
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        gate.open();
        let waited = worker.join().unwrap();
        assert!(
            waited >= Duration::from_millis(90) && waited < MOST,
            "{waited:?}"
        );
        let started = Instant::now();
        Gate::open_now().wait();
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}
