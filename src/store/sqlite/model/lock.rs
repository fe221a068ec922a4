//! One builder of a read model at a time. Building the model of a 10M
//! ledger takes minutes, and an operator may open the console twice, or
//! run `settle list` beside it, meanwhile: a second builder would empty
//! the tables the first is filling. The builder holds an advisory lock on
//! `LEDGER-settle.lock` (the operating system's, so it is released when
//! the process ends however it ends); another process waits for it,
//! saying whose build it waits for and how far it has come, then finds
//! the model built or resumes it where the first left off.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use crate::error::{Error, Result};
use crate::store::open::Progress;

/// How often a waiting process looks whether the builder is done.
const POLL: Duration = Duration::from_millis(200);

/// The lock, held until dropped.
pub(super) struct BuildLock {
    _file: Option<File>,
}

/// The lock file of the read model of `ledger`.
pub(crate) fn lock_path(ledger: &Path) -> PathBuf {
    let mut name = super::ddl::sidecar(ledger).into_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

impl BuildLock {
    /// Takes the lock of `ledger`'s read model, waiting while another
    /// process holds it and telling `progress` how far that build is
    /// (read from the model's marks through `k`, the keeper).
    pub(super) fn take(
        ledger: &Path,
        k: &Connection,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<BuildLock> {
        let path = lock_path(ledger);
        let opened = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path);
        let mut file = match opened {
            Ok(file) => file,
            // A folder settle may not create files in: the model's own
            // file is there already, so build without the lock rather
            // than refuse to open the ledger.
            Err(_) => return Ok(BuildLock { _file: None }),
        };
        loop {
            match file.try_lock() {
                Ok(()) => {
                    // Whose build a waiting process waits for.
                    let _ = file.set_len(0);
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(BuildLock { _file: Some(file) });
                }
                Err(TryLockError::WouldBlock) => {
                    progress(waiting(&path, k));
                    std::thread::sleep(POLL);
                }
                // A file system without locks: as without the file.
                Err(TryLockError::Error(e)) if unsupported(&e) => {
                    return Ok(BuildLock { _file: None });
                }
                Err(TryLockError::Error(e)) => {
                    return Err(Error::ledger(
                        &path,
                        format!("taking the read model's build lock: {e}"),
                        "check the folder's permissions, or delete the lock file if no settle runs",
                    ));
                }
            }
        }
    }
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::Unsupported | std::io::ErrorKind::PermissionDenied
    )
}

/// What a waiting process says: the builder's pid, and the operations it
/// has copied of all there are (none while it sets up).
fn waiting(path: &Path, k: &Connection) -> Progress {
    let pid = std::fs::read_to_string(path).unwrap_or_default();
    let who = match pid.trim() {
        "" => "another settle process".to_string(),
        pid => format!("settle process {pid}"),
    };
    let (done, total) = copied(k).unwrap_or((0, 0));
    Progress {
        step: format!("waiting for {who}, which builds the read model"),
        done: usize::try_from(done).unwrap_or(0),
        total: usize::try_from(total).unwrap_or(0),
    }
}

/// How many of the ledger's operations the model's build has copied, of
/// how many there are; None before the build made its marks.
fn copied(k: &Connection) -> rusqlite::Result<(i64, i64)> {
    let ops: Option<i64> = k
        .query_row("SELECT ops FROM settle_marks", [], |r| r.get(0))
        .optional()
        .unwrap_or(None);
    let (min, max): (i64, i64) = k.query_row(
        "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM l.operations",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let total = (max - min + 1).max(0);
    Ok((ops.map_or(0, |o| (o - min + 1).clamp(0, total)), total))
}
