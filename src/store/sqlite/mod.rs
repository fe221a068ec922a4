//! The SQLite backend of the ledger: opening, adopting and migrating a file,
//! paging through operations, reading one operation's history, recording
//! decisions atomically, importing operations. Only [`crate::store::Ledger`]
//! calls it; it returns [`crate::domain`] types and never a row.

pub(super) mod chain;
mod columns;
mod copy;
pub(super) mod decide;
mod decide_bulk;
mod derived;
mod import;
mod lookup;
mod probes;
mod read;
mod retries;
pub mod schema;
pub(super) mod service;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use schema::sqlite;

use crate::store::interrupt::{Interrupt, InterruptHandle};
use crate::store::open::{Access, BUSY_TIMEOUT, OpenReport, Progress};
use crate::store::tables::Tables;

/// An open SQLite ledger.
pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
    read_only: bool,
    /// Which of settle's tables the file holds: a read-only look at a
    /// service ledger that was never adopted has none, so reads of
    /// decisions, retry requests and probes return nothing.
    tables: Tables,
    /// The trigger-kept summary and count tables are there and current, so
    /// reads use them instead of aggregating (false for a read-only look at
    /// a ledger that was never adopted or migrated).
    derived: bool,
    /// The busy timeout: how long a write waits for the write lock.
    wait: Duration,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Sqlite {
    /// Creates a new, empty ledger at `path`. Refuses an existing file.
    pub fn create(path: &Path) -> Result<Sqlite> {
        if path.exists() {
            return Err(Error::ledger(
                path,
                "already exists",
                "pick a new path, or open this one with `settle LEDGER`",
            ));
        }
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| sqlite(path, "creating the ledger", e))?;
        configure_writer(&conn, path, BUSY_TIMEOUT)?;
        schema::create(&mut conn, path).map_err(|e| e.busy_after(BUSY_TIMEOUT))?;
        Ok(Sqlite {
            conn,
            path: path.to_path_buf(),
            read_only: false,
            tables: Tables::ALL,
            derived: true,
            wait: BUSY_TIMEOUT,
        })
    }

    /// Opens an existing ledger. A writable ledger created by a service
    /// (schema version 0) or by an older settle is adopted or migrated in one
    /// transaction; a read-only one is only read.
    pub fn open(path: &Path, access: Access) -> Result<(Sqlite, OpenReport)> {
        Sqlite::open_with_progress(path, access, &mut |_| {})
    }

    /// [`Sqlite::open`], calling `progress` before each step of an adoption
    /// or migration (building the indexes of a big ledger takes a while). A
    /// read-only open never adopts, so it never calls `progress`.
    pub fn open_with_progress(
        path: &Path,
        access: Access,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Sqlite, OpenReport)> {
        Sqlite::open_waiting(path, access, BUSY_TIMEOUT, progress)
    }

    /// [`Sqlite::open_with_progress`] whose writes (an adoption included)
    /// wait up to `wait` for another process's write lock before failing
    /// with [`Error::Busy`].
    pub fn open_waiting(
        path: &Path,
        access: Access,
        wait: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Sqlite, OpenReport)> {
        if !path.is_file() {
            return Err(Error::ledger(
                path,
                if path.exists() {
                    "is not a file"
                } else {
                    "no such file"
                },
                "check the path; `settle init LEDGER` creates a new ledger, `settle demo` a sample one",
            ));
        }
        let mut report = OpenReport::default();
        let mut read_only = access == Access::ReadOnly;
        if !read_only && !writable(path) {
            read_only = true;
            report.read_only_reason = Some("the file is not writable".to_string());
        }
        let flags = if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(|e| schema::classify_open_error(path, e))?;
        conn.busy_timeout(wait)
            .map_err(|e| sqlite(path, "setting the busy timeout", e))?;
        let found = schema::inspect(&conn, path)?;
        let mut tables = found.tables();
        let mut derived = found.derived;
        if read_only {
            if found.needs_upgrade {
                report.not_adopted = Some(if found.user_version < schema::SCHEMA_VERSION {
                    format!(
                        "schema {} is older than {}; shown read-only without adopting it",
                        found.user_version,
                        schema::SCHEMA_VERSION
                    )
                } else {
                    "some of settle's tables, columns, indexes or triggers are missing; \
                     shown read-only without repairing it"
                        .to_string()
                });
            }
        } else {
            configure_writer(&conn, path, wait)?;
            if found.needs_upgrade {
                report.upgraded = Some(
                    schema::upgrade(&mut conn, path, progress).map_err(|e| e.busy_after(wait))?,
                );
                tables = Tables::ALL;
                derived = true;
            }
        }
        Ok((
            Sqlite {
                conn,
                path: path.to_path_buf(),
                read_only,
                tables,
                derived,
                wait,
            },
            report,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Changes whenever another connection commits to the file; the console
    /// polls it to show live changes without rereading anything.
    pub fn data_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.err("reading data_version", e))
    }

    /// Reads again which tables the file holds, after another connection
    /// adopted or migrated it, so reads use them from now on (a read-only
    /// look opened before the adoption otherwise keeps aggregating and
    /// never sees the decisions).
    pub fn reinspect(&mut self) -> Result<()> {
        let found = schema::inspect(&self.conn, &self.path)?;
        self.tables = found.tables();
        self.derived = found.derived;
        Ok(())
    }

    /// A handle another thread may use to stop the read running on this
    /// ledger (the console cancels a page when the filter changes). The
    /// stopped read returns [`Error::Interrupted`]; a handle used while
    /// nothing runs does nothing.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(self.conn.get_interrupt_handle())
    }

    fn err(&self, doing: &str, e: rusqlite::Error) -> Error {
        sqlite(&self.path, doing, e)
    }

    fn ensure_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ledger(
                &self.path,
                "opened read-only",
                "open it without --read-only, from an account that may write the file",
            ));
        }
        Ok(())
    }
}

impl Interrupt for rusqlite::InterruptHandle {
    fn interrupt(&self) {
        rusqlite::InterruptHandle::interrupt(self);
    }
}

/// WAL so readers never block the writer; FULL sync so an acknowledged
/// decision survives a power cut (WAL's NORMAL may lose the last commits).
fn configure_writer(conn: &Connection, path: &Path, wait: Duration) -> Result<()> {
    conn.busy_timeout(wait)
        .map_err(|e| sqlite(path, "setting the busy timeout", e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| schema::classify_open_error(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::ledger(
            path,
            format!("could not switch to WAL journaling (got {mode})"),
            "put the ledger on a local file system that supports shared memory",
        ));
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| sqlite(path, "setting synchronous=FULL", e))?;
    conn.pragma_update(None, "foreign_keys", "OFF")
        .map_err(|e| sqlite(path, "configuring the connection", e))?;
    Ok(())
}

/// Whether this process may write the file (and its folder, where SQLite puts
/// the WAL and shared-memory files).
fn writable(path: &Path) -> bool {
    // The mode bits first: root may open anything, but a ledger someone made
    // read-only (chmod a-w) is meant to be left alone.
    let bits_ok = std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly());
    // access(2), never open-and-close: closing any descriptor of the file
    // drops every POSIX lock this process holds on it, including the locks
    // of the process's other connections (SQLite's "how to corrupt" 2.2).
    // A second connection opened while a first was in use let another
    // process delete the WAL under it: two workers then each ran every
    // retry request (issue 11 point 3).
    let file_ok = bits_ok && rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok();
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir_ok = std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly());
    file_ok && dir_ok
}

#[cfg(test)]
mod tests;
