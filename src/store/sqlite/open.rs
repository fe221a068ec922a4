//! Creating and opening a SQLite ledger file: the connection's settings,
//! then the schema's creation, adoption or migration ([`super::schema`]).

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::conn::Away;
use super::conn::Sqlite;
use super::error::{classify_open_error, sqlite};
use super::model::Model;
use super::schema;
use crate::domain::Declarations;
use crate::error::{Error, Fault, Result};
use crate::store::open::{Access, BUSY_TIMEOUT, OpenReport, Progress};
use crate::store::tables::Tables;

impl Sqlite {
    /// Creates a new, empty ledger at `path`. Refuses an existing file.
    pub(crate) fn create(path: &Path) -> Result<Sqlite> {
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
        let model = writable_model(&conn, path, BUSY_TIMEOUT, &mut |_| {})?;
        Ok(Sqlite {
            conn,
            path: path.to_path_buf(),
            read_only: false,
            tables: Tables::ALL,
            model: RefCell::new(Some(model)),
            away: RefCell::default(),
            wait: BUSY_TIMEOUT,
            declared: Declarations::default(),
            created_here: true,
        })
    }

    /// Opens an existing ledger read-only or to write, with the default wait.
    #[cfg(test)]
    pub(crate) fn open(path: &Path, access: Access) -> Result<(Sqlite, OpenReport)> {
        Sqlite::open_waiting(path, access, BUSY_TIMEOUT, &mut |_| {})
    }

    /// [`Sqlite::open`], calling `progress` before each step of an adoption.
    #[cfg(test)]
    pub(crate) fn open_with_progress(
        path: &Path,
        access: Access,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(Sqlite, OpenReport)> {
        Sqlite::open_waiting(path, access, BUSY_TIMEOUT, progress)
    }

    /// Opens an existing ledger. A writable ledger created by a service
    /// (schema version 0) or by an older settle is adopted or migrated in
    /// one transaction, calling `progress` before each step; a read-only one
    /// is only read. Writes (an adoption included) wait up to `wait` for
    /// another process's write lock before failing with [`Error::Busy`].
    pub(crate) fn open_waiting(
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
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| classify_open_error(path, e))?;
        conn.busy_timeout(wait)
            .map_err(|e| sqlite(path, "setting the busy timeout", e))?;
        let found = schema::inspect(&conn, path)?;
        let mut tables = found.tables();
        let model;
        if read_only {
            model = read_only_model(&conn, path, wait, &found, &mut report)?;
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
                tables = Tables::ALL;
            }
            model = adopt(&mut conn, path, wait, &found, &mut report, progress)?;
        }
        Ok((
            Sqlite {
                conn,
                path: path.to_path_buf(),
                read_only,
                tables,
                away: RefCell::new((!read_only && model.is_none()).then(Away::default)),
                model: RefCell::new(model),
                wait,
                declared: Declarations::default(),
                created_here: false,
            },
            report,
        ))
    }
}

/// Upgrades a writable ledger when `found` says it needs it (said in
/// `report`), then builds or opens its read model: one count of steps for
/// `progress`, the read model's after the upgrade's.
fn adopt(
    conn: &mut Connection,
    path: &Path,
    wait: Duration,
    found: &schema::Inspection,
    report: &mut OpenReport,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Model>> {
    let mut upgrade_steps = 0;
    if found.needs_upgrade {
        let mut counted = |p: Progress| {
            upgrade_steps = p.total + 1;
            progress(p);
        };
        report.upgraded =
            Some(schema::upgrade(conn, path, &mut counted).map_err(|e| e.busy_after(wait))?);
    }
    let mut after_upgrade = |p: Progress| {
        progress(Progress {
            done: p.done + upgrade_steps,
            total: p.total + upgrade_steps,
            ..p
        });
    };
    match writable_model(conn, path, wait, &mut after_upgrade) {
        Ok(model) => Ok(Some(model)),
        // The ledger may still take a decision the model cannot: read
        // without it, and it comes back by itself once space is freed.
        Err(
            e @ Error::Database {
                fault: Fault::Full, ..
            },
        ) => {
            report.model_aside = Some(format!(
                "settle's read model could not be opened ({e}); reads go to the ledger's \
                 own tables, slower, until it can, by itself once space is freed"
            ));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The read model of a writable ledger at schema 6, built when missing or
/// untrusted (`progress` told each step) and attached to `conn`.
fn writable_model(
    conn: &Connection,
    path: &Path,
    wait: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Model> {
    let id = schema::ledger_id(conn, path)?.ok_or_else(|| {
        Error::ledger(
            path,
            "settle's identity row in settle_meta is missing",
            "open it once more read-write; if it stays, restore settle_meta from a backup",
        )
    })?;
    let model = Model::ensure(path, &id, wait, progress)?;
    model.attach(conn)?;
    Ok(model)
}

/// The read model of a ledger opened only to read, attached when it is
/// there and built for this ledger; otherwise the report says the ledger
/// is shown without it (the console then builds it in the background).
fn read_only_model(
    conn: &Connection,
    path: &Path,
    wait: Duration,
    found: &schema::Inspection,
    report: &mut OpenReport,
) -> Result<Option<Model>> {
    if !found.read_model {
        return Ok(None);
    }
    let model = match schema::ledger_id(conn, path)? {
        Some(id) => Model::ready(path, &id, wait),
        None => None,
    };
    match model {
        Some(model) => {
            model.attach(conn)?;
            Ok(Some(model))
        }
        None => {
            report.not_adopted.get_or_insert_with(|| {
                "settle's read model beside it is missing or out of date; \
                 shown read-only without it until it is built"
                    .to_string()
            });
            Ok(None)
        }
    }
}

/// WAL so readers never block the writer; FULL sync so an acknowledged
/// decision survives a power cut (WAL's NORMAL may lose the last commits).
pub(super) fn configure_writer(conn: &Connection, path: &Path, wait: Duration) -> Result<()> {
    conn.busy_timeout(wait)
        .map_err(|e| sqlite(path, "setting the busy timeout", e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| classify_open_error(path, e))?;
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
    // process delete the WAL under it, and two workers then each ran
    // every retry request.
    let file_ok = bits_ok && rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok();
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir_ok = std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly());
    file_ok && dir_ok
}

/// Why `path` cannot take a write, told from the file's and its folder's
/// permissions: SQLite writes `LEDGER-wal` and `LEDGER-shm` beside the file,
/// so a read-only folder blocks a writable file too. Asked with access(2),
/// never by opening the file ([`writable`] says why).
pub(super) fn not_writable(path: &Path) -> Error {
    let file_read_only = std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly());
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if file_read_only || rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_err() {
        Error::ledger(
            path,
            "the file is not writable; nothing was written",
            "check its permissions (`ls -l`): give your account write access (e.g. `chmod u+w`), or decide as the account that owns it",
        )
    } else {
        Error::ledger(
            path,
            format!(
                "its folder {} is not writable, and SQLite keeps the ledger's -wal and -shm files there; nothing was written",
                dir.display()
            ),
            "give your account write access to the folder (`ls -ld` shows who may write), or move the ledger to a folder you may write",
        )
    }
}
