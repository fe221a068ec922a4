//! The open job queue, [`JobQueue`]: a session on the engine's database,
//! kept read-only (nothing settle runs on it can write the engine's
//! tables), and the parts of the contract that are about the session
//! itself. Reads are in [`super::reads`]; what settle cannot write on a
//! job queue yet is refused in [`super::refuse`].

use std::cell::{Cell, RefCell, RefMut};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use postgres::Client;

use super::engine::EngineSql;
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::backend::Session;
use crate::store::filter::Statement;
use crate::store::interrupt::{Interrupt, InterruptHandle};
use crate::store::postgres::{
    Asked, Cells, Foreign, Portal, foreign_session, pg_error, pg_error_asked, refs, stream_on,
};
use crate::store::sql::Arg;
use crate::store::tables::Tables;

/// A job queue's database, read as a ledger in place.
pub(crate) struct JobQueue {
    /// Every read takes `&self` while the client needs `&mut`; one thread
    /// uses a ledger at a time.
    client: RefCell<Client>,
    /// The address as given, to connect again after the server closed
    /// the session.
    address: PathBuf,
    /// The engine and the database as shown (never a password).
    shown: PathBuf,
    pub(super) sql: &'static EngineSql,
    /// Opened read-only, or an engine settle does not decide on yet.
    read_only: bool,
    pub(super) wait: Duration,
    cancel: RefCell<Arc<InterruptHandle>>,
    /// The cancels sent on the session and its timeout, which tell why
    /// the server stopped a read.
    asked: RefCell<Asked>,
    /// Whether settle's own schema is there yet (its first decision makes
    /// it): reads of decisions need it.
    tables: Cell<Tables>,
    /// The contracts the receivers file declares.
    pub(super) declared: Declarations,
    /// The team's table this is, when opened by a mapping file.
    pub(super) mapped: Option<&'static super::mapped::file::Mapping>,
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobQueue")
            .field("ledger", &self.shown)
            .finish()
    }
}

impl JobQueue {
    /// The engine's tables at `address`, read through `client` (a
    /// [`crate::store::postgres::Foreign`] session).
    pub(super) fn new(
        address: &Path,
        session: Foreign,
        sql: &'static EngineSql,
        read_only: bool,
        wait: Duration,
    ) -> Result<JobQueue> {
        let mut queue = JobQueue {
            client: RefCell::new(session.client),
            address: address.to_path_buf(),
            shown: PathBuf::from(format!("{} ({})", session.shown.display(), sql.name)),
            sql,
            read_only: read_only || sql.writes.is_none(),
            wait,
            cancel: RefCell::new(Arc::new(session.cancel)),
            asked: RefCell::new(session.asked),
            tables: Cell::new(Tables {
                console: false,
                worker: false,
            }),
            declared: Declarations::default(),
            mapped: None,
        };
        settle_first(queue.client.get_mut(), &queue.shown)?;
        if queue.read_only && !read_only {
            // An engine settle does not decide on: nothing it runs writes.
            queue
                .client
                .get_mut()
                .batch_execute("SET default_transaction_read_only = on")
                .map_err(|e| pg_error(&queue.shown, "setting up the session", e))?;
        }
        queue.inspect()?;
        Ok(queue)
    }

    /// Which of settle's tables are there: its schema, all of them, once
    /// adoption made it.
    pub(super) fn inspect(&mut self) -> Result<()> {
        let shown = self.shown.clone();
        let there: bool = self
            .client
            .get_mut()
            .query_one("SELECT to_regclass('settle.decisions') IS NOT NULL", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| pg_error(&shown, "looking for settle's schema", e))?;
        self.tables.set(Tables {
            console: there,
            worker: there,
        });
        Ok(())
    }

    pub(super) fn tables(&self) -> Tables {
        self.tables.get()
    }

    /// The session, reconnected first when the server closed it.
    pub(super) fn client(&self) -> Result<RefMut<'_, Client>> {
        self.fresh()?;
        self.asked.borrow().read_begins();
        Ok(self.client.borrow_mut())
    }

    /// Runs `f` on the session; `doing` says what failed.
    pub(super) fn with_client<T>(
        &self,
        doing: &str,
        f: impl FnOnce(&mut Client) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        f(&mut *self.client()?).map_err(|e| self.err(doing, e))
    }

    pub(super) fn shown(&self) -> &Path {
        &self.shown
    }

    pub(super) fn err(&self, doing: &str, e: postgres::Error) -> Error {
        pg_error_asked(&self.shown, doing, e, &self.asked.borrow())
    }

    /// A new session in place of one the server closed (a restart, a
    /// failover, an idle timeout); every read starts here.
    fn fresh(&self) -> Result<()> {
        if !self.client.borrow().is_closed() {
            return Ok(());
        }
        let mut session = foreign_session(&self.address, self.read_only, self.wait)?;
        settle_first(&mut session.client, &self.shown)?;
        *self.cancel.borrow_mut() = Arc::new(session.cancel);
        *self.asked.borrow_mut() = session.asked;
        *self.client.borrow_mut() = session.client;
        Ok(())
    }

    /// Each row of `sql`, read by `read`; `doing` says what failed.
    pub(super) fn rows<T>(
        &self,
        sql: &str,
        args: &[Arg],
        doing: &str,
        read: impl FnMut(&mut Cells<'_>) -> std::result::Result<T, postgres::Error>,
    ) -> Result<Vec<T>> {
        self.fresh()?;
        let mut read = read;
        let rows = self
            .client
            .borrow_mut()
            .query(sql, &refs(args))
            .map_err(|e| self.err(doing, e))?;
        rows.iter()
            .map(|row| read(&mut Cells::new(row)))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(doing, e))
    }

    /// Hands each row of `statement` to `each` through PostgreSQL's portal
    /// reader, a batch at a time, never all held in memory; a whole list
    /// may take longer than the statement timeout a page has.
    pub(super) fn stream(
        &self,
        statement: &Statement,
        doing: &str,
        each: &mut dyn FnMut(&mut Cells<'_>) -> Result<()>,
    ) -> Result<()> {
        self.fresh()?;
        let asked = self.asked.borrow().clone();
        asked.read_begins();
        asked.untimed();
        let failed = |e| self.err(doing, e);
        let portal = Portal { untimed: true };
        stream_on(
            &mut self.client.borrow_mut(),
            statement,
            portal,
            &failed,
            each,
        )
    }

    /// Why settle does not `what` (a verb: `probe`, `copy`) this engine's
    /// jobs: nothing was written.
    pub(super) fn refusal(&self, what: &str) -> Error {
        let name = self.sql.name;
        Error::ledger(
            &self.shown,
            format!("settle cannot {what} {name} jobs yet; nothing was written"),
            format!(
                "settle reads {name}'s tables in place and decides on its jobs; do this with {name}'s own tools for now"
            ),
        )
    }
}

/// How long a job may stay locked by its worker before it is stuck, for
/// this process (`--locked-after`); unset, each engine's own default.
static LOCKED_AFTER: OnceLock<Duration> = OnceLock::new();

/// Sets how long a locked job stays its worker's (`--locked-after`) for
/// the job queues this process opens. The first call wins.
pub fn use_locked_after(bound: Option<Duration>) {
    if let Some(bound) = bound {
        let _ = LOCKED_AFTER.set(bound);
    }
}

/// Whether a not-applied decision on Graphile Worker removes the job
/// (`--remove-not-applied`) rather than failing it for good.
static REMOVES_NOT_APPLIED: OnceLock<bool> = OnceLock::new();

/// Sets, for this process, that a not-applied decision on Graphile Worker
/// removes the job through its `remove_job` (`--remove-not-applied`). The
/// first call wins.
pub fn use_removal(removes: bool) {
    let _ = REMOVES_NOT_APPLIED.set(removes);
}

/// Whether [`use_removal`] asked for removal.
pub(super) fn removes_not_applied() -> bool {
    REMOVES_NOT_APPLIED.get().copied().unwrap_or(false)
}

/// Puts settle's own schema first on the session's search path, the
/// engine's tables staying where the path found them: the shared
/// statements that name `decisions`, `retry_requests` and `op_types` then
/// read and write settle's, never a table of the application's that has
/// the same name. The `--locked-after` bound goes in the session's
/// `settle.locked_after`, which the views read, so every statement over
/// them means the same bound without a parameter of its own.
fn settle_first(client: &mut Client, shown: &Path) -> Result<()> {
    let locked_after = LOCKED_AFTER
        .get()
        .map_or(String::new(), |d| format!("{} seconds", d.as_secs()));
    client
        .execute(
            "SELECT set_config('search_path', 'settle, ' || current_setting('search_path'), false),
                set_config('settle.locked_after', $1, false)",
            &[&locked_after],
        )
        .map(|_| ())
        .map_err(|e| pg_error(shown, "setting up the session", e))
}

/// A cancel that reaches the session's current connection.
struct Shared(Arc<InterruptHandle>);

impl Interrupt for Shared {
    fn interrupt(&self) {
        self.0.interrupt();
    }
}

impl Session for JobQueue {
    fn declare(&mut self, declarations: Declarations) {
        self.declared = declarations;
    }

    fn declarations(&self) -> &Declarations {
        &self.declared
    }

    fn path(&self) -> &Path {
        &self.shown
    }

    fn file(&self) -> Option<&Path> {
        None
    }

    /// The engine's schema is its own: settle adds none of its tables.
    fn schema_version(&self) -> i64 {
        0
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Result<i64> {
        let sql = self.sql.data_version;
        let version = self.rows(sql, &[], "watching the jobs", |c| {
            crate::store::cells::CellRead::int(c, 0, "version")
        })?;
        Ok(version.first().copied().unwrap_or(0))
    }

    fn reinspect(&mut self) -> Result<()> {
        self.fresh()?;
        self.inspect()
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(Shared(self.cancel.borrow().clone()))
    }

    fn reconnect_after(&self, failed: &Error) -> bool {
        failed.is_lost_connection() && self.client.borrow().is_closed() && self.fresh().is_ok()
    }

    fn why_not_writable(&self) -> Error {
        if self.sql.writes.is_none() {
            return self.refusal("decide on");
        }
        Error::ledger(
            &self.shown,
            "opened read-only",
            "open it without --read-only, as a role that may write the engine's jobs and create the settle schema",
        )
    }
}
