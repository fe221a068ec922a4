//! settle's read model of a SQLite ledger: a file beside it (`LEDGER-settle`)
//! holding, per operation, the columns the filters and the list need with
//! their indexes, an index of events by operation, the count per state, a
//! trigram index of what `err:` and free text read, and how far it has read
//! the ledger. The service's tables carry no trigger
//! and no index of settle's: the model is built and kept current by
//! settle's own connection (the keeper, whose `main` is the model and which
//! attaches the ledger read-only), so neither a build nor an index on it can
//! stall a service's write. Reading connections attach it as `rm`; what
//! they show comes from the ledger, the model only finds it.

mod build;
mod bulk;
mod catch_up;
mod ddl;
mod flush;
mod lock;
mod texts;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::error::sqlite;
use crate::domain::CatchUp;
use crate::error::{Error, Fault, Result};
use crate::store::backend::Waiter;
use crate::store::open::Progress;

pub(crate) use ddl::sidecar;
#[cfg(test)]
pub(crate) use lock::lock_path;

/// How often a read looks whether the model's file is still the one it
/// reads (deleted, or replaced by another connection's rebuild).
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How long one read may spend on the sweep before it reads.
const SWEEP_BUDGET: Duration = Duration::from_millis(5);

/// How long a read spends catching up before it reads what the model
/// holds, when reads catch up in steps ([`Model::catch_up_in_steps`]).
const CATCH_UP_BUDGET: Duration = Duration::from_millis(40);

/// The least time between two rounds of the sweep: a service committing
/// every few milliseconds would otherwise keep every read sweeping.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// The read model of one open ledger: the keeper's connection, and what
/// this process last saw of the ledger.
pub(crate) struct Model {
    keeper: Connection,
    ledger: PathBuf,
    /// The reading connection's `data_version` and `total_changes` at the
    /// last catch-up: either changes when someone committed to the ledger.
    seen: Cell<Option<(i64, u64)>>,
    /// Where the sweep goes on from; None once it went through the ledger
    /// and nobody committed since.
    sweep_from: Cell<Option<i64>>,
    /// When the sweep's last round began.
    swept_at: Cell<Instant>,
    /// Who waits on this connection's reads, once they catch up a budget
    /// at a time and then read what the model holds (the console, which
    /// says so); None while they catch up all the way first (the CLI).
    /// Only reads the operator does not wait on go on with the sweep
    /// ([`Model::catch_up_in_steps`]).
    waiter: Cell<Option<Waiter>>,
    /// Where the catch-up under way stands; None when the model is current.
    behind: Cell<Option<CatchUp>>,
    /// The `err:` terms last asked, and those of them the index answers.
    rare: RefCell<Option<(Vec<String>, Vec<String>)>>,
    /// The file the keeper opened, and when a read last looked that the
    /// path still names it.
    file: Option<FileId>,
    looked_at: Cell<Instant>,
    /// The model failed at its own work (a catch-up, a sweep, its file
    /// gone): reads set it aside ([`crate::store::backend::ReadModel::set_aside`]).
    broken: Cell<bool>,
}

/// Which file a path names: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId(u64, u64);

impl FileId {
    pub(crate) fn of(path: &Path) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(path)
            .ok()
            .map(|m| FileId(m.dev(), m.ino()))
    }
}

/// What the read model's file holds for a ledger.
#[derive(Debug, PartialEq, Eq)]
enum Health {
    /// Built for this ledger and current up to its watermarks.
    Ready,
    /// A build of this ledger in this format that stopped before it was
    /// complete, with its operations and events marks: it goes on there.
    Stopped { ops: i64, events: i64 },
    /// A build that stopped, begun in another boot of the machine: it did
    /// not sync, so the file may have lost pages. Deleted and built again.
    Torn,
    /// Missing, another ledger's, another format's, or ahead of the ledger
    /// (a ledger restored from a backup): built again from the start.
    Stale,
}

/// Sets every schema of `conn` to keep at most `kib` KiB of pages.
pub(crate) fn cap_cache(conn: &rusqlite::Connection, kib: i64) {
    let schemas: Vec<String> = conn
        .prepare("SELECT name FROM pragma_database_list")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default();
    for schema in schemas {
        // A best effort: a cache left larger costs memory, never a row.
        let _ = conn.pragma_update(Some(schema.as_str()), "cache_size", -kib);
    }
}

impl Model {
    /// See [`crate::store::backend::Session::cache_within`].
    pub(crate) fn cache_within(&self, kib: i64) {
        cap_cache(&self.keeper, kib);
    }

    /// The read model of the writable ledger at `ledger`, built (with
    /// `progress`) when it is missing or cannot be trusted, and caught up.
    pub(crate) fn ensure(
        ledger: &Path,
        ledger_id: &str,
        wait: Duration,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Model> {
        let err = |doing: &str, e| sqlite(&sidecar(ledger), doing, e);
        let opened = keeper(ledger, wait).and_then(|k| Ok((health(&k, ledger_id)?, k)));
        let (found, mut keeper) = match opened {
            Ok(found) => found,
            // Not a database, or corrupt: only settle's copy, made again.
            Err(e) if unreadable(&e) => {
                discard(ledger);
                let k = keeper(ledger, wait).map_err(|e| err("creating the read model", e))?;
                (Health::Stale, k)
            }
            Err(e) => return Err(err("opening the read model", e)),
        };
        let built = found != Health::Ready;
        if built {
            let _lock = lock::BuildLock::take(ledger, &keeper, progress)?;
            // Whoever held the lock may have built it meanwhile.
            let from = match health(&keeper, ledger_id) {
                Ok(Health::Ready) => None,
                Ok(Health::Stopped { ops, events }) => Some(Some((ops, events))),
                Ok(Health::Stale) => Some(None),
                Ok(Health::Torn) => {
                    drop(keeper);
                    discard(ledger);
                    keeper = self::keeper(ledger, wait)
                        .map_err(|e| err("creating the read model", e))?;
                    Some(None)
                }
                Err(e) => return Err(err("reading the read model", e)),
            };
            if let Some(stopped) = from {
                build::build(&keeper, ledger_id, stopped, progress)
                    .map_err(|e| err("building the read model", e))?;
            }
        }
        let model = Model::new(keeper, ledger);
        // What came in during the build. A model that was already built
        // catches up on its first read instead: a week's backlog must not
        // hold up an open.
        if built {
            model.catch_up_all()?;
        }
        Ok(model)
    }

    /// A model set aside made ready again, off the reading thread: a file
    /// found damaged (still the one `damaged` names, and unreadable to a
    /// connection of its own) is discarded under the build lock, then the
    /// model is opened, and built when missing, as [`Model::ensure`] does.
    /// A file deleted or replaced is not touched: it is another's now.
    pub(crate) fn rebuild(
        ledger: &Path,
        ledger_id: &str,
        wait: Duration,
        damaged: Option<FileId>,
    ) -> Result<Model> {
        if let Some(old) = damaged {
            let scratch = Connection::open_in_memory()
                .map_err(|e| sqlite(&sidecar(ledger), "rebuilding the read model", e))?;
            let _lock = lock::BuildLock::take(ledger, &scratch, &mut |_| {})?;
            if FileId::of(&sidecar(ledger)) == Some(old) && !intact(ledger) {
                discard(ledger);
            }
        }
        Model::ensure(ledger, ledger_id, wait, &mut |_| {})
    }

    /// The read model of a ledger opened only to read, when it is there
    /// and built for this ledger; None otherwise (nothing is created).
    pub(crate) fn ready(ledger: &Path, ledger_id: &str, wait: Duration) -> Option<Model> {
        if !sidecar(ledger).is_file() {
            return None;
        }
        let keeper = keeper(ledger, wait).ok()?;
        // A read model this account may not write would fall behind.
        if keeper.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
            return None;
        }
        (health(&keeper, ledger_id).ok()? == Health::Ready).then(|| Model::new(keeper, ledger))
    }

    fn new(keeper: Connection, ledger: &Path) -> Model {
        Model {
            file: FileId::of(&sidecar(ledger)),
            looked_at: Cell::new(Instant::now()),
            broken: Cell::new(false),
            keeper,
            ledger: ledger.to_path_buf(),
            seen: Cell::new(None),
            sweep_from: Cell::new(Some(0)),
            swept_at: Cell::new(Instant::now()),
            waiter: Cell::new(None),
            behind: Cell::new(None),
            rare: RefCell::new(None),
        }
    }

    /// The `err:` terms of `asked` the index answers, when they were
    /// judged for the same terms last time; else `judge` decides and is
    /// remembered. A page down asks again for the same filter, and the
    /// judgement counts up to 20,000 candidates. A
    /// stale one costs only speed: each term's own `LIKE` decides the rows.
    pub(crate) fn rare_terms(
        &self,
        asked: &[String],
        judge: impl FnOnce() -> Result<Vec<String>>,
    ) -> Result<Vec<String>> {
        if let Some((terms, rare)) = self.rare.borrow().as_ref()
            && terms == asked
        {
            return Ok(rare.clone());
        }
        let rare = judge()?;
        *self.rare.borrow_mut() = Some((asked.to_vec(), rare.clone()));
        Ok(rare)
    }

    /// Attaches the read model to `conn`, the ledger's reading connection,
    /// as `rm`.
    pub(crate) fn attach(&self, conn: &Connection) -> Result<()> {
        let path = sidecar(&self.ledger);
        let name = path.to_string_lossy();
        conn.execute("ATTACH DATABASE ?1 AS rm", [name.as_ref()])
            .map(|_| ())
            .map_err(|e| sqlite(&path, "attaching the read model", e))
    }

    /// Brings the read model up to what `conn` (the reading connection)
    /// can see, when someone committed since the last time; then, unless
    /// the operator waits on these reads, one bounded slice of the sweep.
    pub(crate) fn fresh(&self, conn: &Connection) -> Result<()> {
        if self.looked_at.get().elapsed() >= LOOK_EVERY {
            self.looked_at.set(Instant::now());
            if FileId::of(&sidecar(&self.ledger)) != self.file {
                self.broken.set(true);
                return Err(Error::Database {
                    path: sidecar(&self.ledger),
                    doing: "reading the read model".to_string(),
                    problem: "the file was deleted or replaced".to_string(),
                    fault: Fault::Damaged,
                });
            }
        }
        self.keep(conn).inspect_err(|e| {
            if !matches!(e, Error::Interrupted { .. }) && !e.is_transient() {
                self.broken.set(true);
            }
        })
    }

    /// Whether the model failed at its own work since it was opened.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.get()
    }

    /// Who waits on this connection's reads, when they catch up in steps.
    pub(crate) fn waiter(&self) -> Option<Waiter> {
        self.waiter.get()
    }

    /// The file the model was opened on.
    pub(crate) fn file(&self) -> Option<FileId> {
        self.file
    }

    /// [`Model::fresh`]'s catch-up and sweep.
    fn keep(&self, conn: &Connection) -> Result<()> {
        let version: i64 = conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| sqlite(&self.ledger, "reading data_version", e))?;
        let now = (version, conn.total_changes());
        if self.seen.get() != Some(now) || self.behind.get().is_some() {
            let budget = self.waiter.get().map(|_| CATCH_UP_BUDGET);
            if self.catch_up_for(budget)?.is_some() {
                // Read what the model holds; the next read goes on.
                return Ok(());
            }
            self.seen.set(Some(now));
            // A commit may have changed what no new row tells: the sweep
            // goes through the ledger again, a bounded slice per read.
            if self.sweep_from.get().is_none() && self.swept_at.get().elapsed() >= SWEEP_EVERY {
                self.sweep_from.set(Some(0));
                self.swept_at.set(Instant::now());
            }
        }
        if self.waiter.get() == Some(Waiter::Operator) {
            return Ok(());
        }
        let started = Instant::now();
        while let Some(from) = self.sweep_from.get() {
            if started.elapsed() > SWEEP_BUDGET {
                break;
            }
            let next = catch_up::sweep(&self.keeper, from)
                .map_err(|e| sqlite(&sidecar(&self.ledger), "sweeping the read model", e))?;
            self.sweep_from.set(next);
        }
        Ok(())
    }

    /// Catch-up batches until the model has read everything committed.
    fn catch_up_all(&self) -> Result<()> {
        self.catch_up_for(None).map(|_| ())
    }

    /// Reads catch up at most [`CATCH_UP_BUDGET`] at a time; the sweep is
    /// left to the reads nobody waits on.
    pub(crate) fn catch_up_in_steps(&self, waiter: Waiter) {
        // A slice of the sweep delayed every page, key and first frame,
        // and no answer needs it first: the console's counts go on with it.
        self.waiter.set(Some(waiter));
        // The console's other worker may hold the model's write lock for a
        // batch, and take it again at once: a step waits its budget at
        // most, then reads what the model holds.
        let _ = self.keeper.busy_timeout(CATCH_UP_BUDGET);
    }

    /// Where the catch-up under way stands, as the last step left it.
    pub(crate) fn catching_up(&self) -> Option<CatchUp> {
        self.behind.get()
    }

    /// One budget's worth of catching up; where it then stands.
    pub(crate) fn catch_up_step(&self) -> Result<Option<CatchUp>> {
        self.catch_up_for(Some(CATCH_UP_BUDGET))
    }

    /// Catch-up batches until the model is current, or `budget` is spent
    /// with more to read: then where it stands, rows read of those there
    /// were to read since it fell behind.
    fn catch_up_for(&self, budget: Option<Duration>) -> Result<Option<CatchUp>> {
        let err = |e| sqlite(&sidecar(&self.ledger), "catching up the read model", e);
        let started = Instant::now();
        let mut total = match self.behind.get() {
            Some(c) => c.total,
            None if budget.is_some() => catch_up::remaining(&self.keeper).map_err(err)?,
            None => 0,
        };
        loop {
            let busy = match catch_up::batch(&self.keeper) {
                Ok(false) => break,
                Ok(true) => false,
                // Another keeper is catching up: where it got is told.
                Err(e) if budget.is_some() && busy(&e) => true,
                Err(e) => return Err(err(e)),
            };
            if busy || budget.is_some_and(|b| started.elapsed() >= b) {
                let left = catch_up::remaining(&self.keeper).map_err(err)?;
                if left == 0 {
                    break;
                }
                total = total.max(left);
                let now = CatchUp {
                    done: total - left,
                    total,
                };
                self.behind.set(Some(now));
                return Ok(Some(now));
            }
        }
        self.behind.set(None);
        Ok(None)
    }

    /// The whole sweep at once, for a test that changes rows behind
    /// settle's back.
    #[cfg(test)]
    pub(crate) fn sweep_all(&self) -> Result<()> {
        self.sweep_from.set(Some(0));
        while let Some(from) = self.sweep_from.get() {
            let next = catch_up::sweep(&self.keeper, from)
                .map_err(|e| sqlite(&sidecar(&self.ledger), "sweeping the read model", e))?;
            self.sweep_from.set(next);
        }
        Ok(())
    }
}

/// The keeper's connection: the read model's file as `main` (created when
/// missing, in WAL so the readers never wait for it), the ledger attached
/// read-only as `l`, so nothing it runs can take the ledger's write lock.
fn keeper(ledger: &Path, wait: Duration) -> rusqlite::Result<Connection> {
    let k = Connection::open_with_flags(
        sidecar(ledger),
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    k.busy_timeout(wait)?;
    k.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    // A copy settle can always make again: a power cut may lose its last
    // commits, never the ledger's.
    k.pragma_update(None, "synchronous", "NORMAL")?;
    k.execute("ATTACH DATABASE ?1 AS l", [read_only_uri(ledger)])?;
    Ok(k)
}

/// `file:` URI of the ledger opened read-only, its path percent-encoded
/// where a URI would read a character otherwise.
fn read_only_uri(ledger: &Path) -> String {
    let absolute = std::path::absolute(ledger).unwrap_or_else(|_| ledger.to_path_buf());
    let mut uri = String::from("file:");
    for b in absolute.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            b if b.is_ascii() && !b.is_ascii_control() => uri.push(char::from(*b)),
            b => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?mode=ro");
    uri
}

/// Whether the keeper's file is the complete read model of `ledger_id`.
fn health(k: &Connection, ledger_id: &str) -> rusqlite::Result<Health> {
    let exists: Option<String> = k
        .query_row(
            "SELECT name FROM sqlite_master WHERE name = 'settle_marks'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_none() {
        return Ok(Health::Stale);
    }
    // A file of an older format has no `boot`: the format tells first.
    let format: Option<i64> = k
        .query_row("SELECT format FROM settle_marks", [], |r| r.get(0))
        .optional()?;
    if format != Some(ddl::FORMAT) {
        return Ok(Health::Stale);
    }
    let marks: Option<(String, i64, i64, i64, String)> = k
        .query_row(
            "SELECT ledger_id, complete, ops, events, boot FROM settle_marks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?;
    let Some((id, complete, ops, events, boot)) = marks else {
        return Ok(Health::Stale);
    };
    let (max_op, max_event): (i64, i64) = k.query_row(
        "SELECT (SELECT coalesce(max(id), 0) FROM l.operations),
                (SELECT coalesce(max(id), 0) FROM l.events)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let ours = id == ledger_id && ops <= max_op && events <= max_event;
    Ok(match (ours, complete) {
        (true, 1) => Health::Ready,
        (true, 0) if bulk::torn(&boot) => Health::Torn,
        (true, 0) => Health::Stopped { ops, events },
        _ => Health::Stale,
    })
}

/// Deletes the read model of `ledger`, with its WAL and shared memory: one
/// SQLite cannot read, or a copy's new file's, which its next open builds
/// in bulk. No connection may have it open.
pub(crate) fn discard(ledger: &Path) {
    let path = sidecar(ledger);
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Whether a connection of its own reads the model's file through
/// without a fault (`PRAGMA quick_check`): the read that failed may have
/// met a damaged ledger, not a damaged model.
fn intact(ledger: &Path) -> bool {
    Connection::open_with_flags(
        sidecar(ledger),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| c.query_row("PRAGMA quick_check(1)", [], |r| r.get::<_, String>(0)))
    .is_ok_and(|verdict| verdict == "ok")
}

/// Whether `e` says another connection holds the lock.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Whether `e` says the file is not a database SQLite can read.
fn unreadable(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

#[cfg(test)]
impl Model {
    /// Runs `during` while the keeper holds a catch-up transaction open,
    /// the read model's write lock taken: what a service does meanwhile on
    /// the ledger must not wait for it.
    pub(crate) fn holding_a_batch(&self, during: impl FnOnce()) {
        let tx = self.keeper.unchecked_transaction().unwrap();
        tx.execute("UPDATE settle_marks SET complete = complete", [])
            .unwrap();
        let _: i64 = tx
            .query_row("SELECT count(*) FROM l.operations", [], |r| r.get(0))
            .unwrap();
        during();
        tx.commit().unwrap();
    }
}
