//! Writing the build's pages out as it goes. The build writes its file
//! without syncing ([`super::bulk`]), so the kernel held gigabytes of it
//! dirty and wrote them out in bursts: the first when the oldest reached
//! the 30 s the kernel lets a page stay dirty, the last at the sync before
//! the model is marked complete. A service's commit that needed the disk meanwhile waited
//! behind them (10M: 203 ms, three commits over 100 ms, at 35, 36 and
//! 57 s). A thread beside the build now syncs the file every
//! [`FLUSH_EVERY`], so a burst is at most what the build wrote since (the
//! same service: 10-12 ms at most, and the build no slower). PostgreSQL
//! does the same for its checkpoints (`checkpoint_flush_after`).
//!
//! The thread syncs through a descriptor of its own, and closing any
//! descriptor of a file drops every POSIX lock the process holds on it,
//! SQLite's included. So it runs only while the build writes through a
//! rollback journal, and is closed before the file goes back to WAL: a
//! connection in a rollback journal holds no lock between transactions.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the thread syncs what the build wrote.
const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// The thread syncing the model's file while the build writes it.
pub(super) struct Flusher {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<File>>,
}

impl Flusher {
    /// Starts syncing `path` every [`FLUSH_EVERY`]. The caller's connection
    /// must hold no lock on it whenever the flusher may close (see the
    /// module's note).
    pub(super) fn start(path: &Path) -> std::io::Result<Flusher> {
        let file = File::open(path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("settle-flush".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::park_timeout(FLUSH_EVERY);
                    // A failed sync here only leaves more for the next one,
                    // and for the last, which says why ([`Flusher::finish`]).
                    let _ = file.sync_data();
                }
                file
            })?;
        Ok(Flusher {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread, syncs the file whole (data and size) and closes
    /// the descriptor: what the build wrote is on disk.
    pub(super) fn finish(mut self) -> rusqlite::Result<()> {
        let synced = match self.join() {
            Some(file) => file.sync_all(),
            None => Err(std::io::Error::other(
                "the thread syncing the model stopped",
            )),
        };
        synced.map_err(|e| not_synced(&self.path, e))
    }

    fn join(&mut self) -> Option<File> {
        let thread = self.thread.take()?;
        self.stop.store(true, Ordering::Relaxed);
        thread.thread().unpark();
        thread.join().ok()
    }
}

impl Drop for Flusher {
    /// A build that failed stops its flusher too; its connection has
    /// rolled back, so it holds no lock the close could drop.
    fn drop(&mut self) {
        self.join();
    }
}

/// A sync that failed, as SQLite's own I/O error naming the file.
pub(super) fn not_synced(file: &Path, e: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_FSYNC),
        Some(format!("syncing {}: {e}", file.display())),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::Flusher;

    #[test]
    fn the_flusher_hands_back_a_synced_file_and_stops_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model");
        std::fs::write(&path, b"").unwrap();
        let flusher = Flusher::start(&path).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"pages")
            .unwrap();
        flusher.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"pages");
        // Dropped without finishing, as a failed build drops it: the
        // thread ends (the test would hang otherwise).
        drop(Flusher::start(&path).unwrap());
        assert!(Flusher::start(&dir.path().join("missing")).is_err());
    }
}
