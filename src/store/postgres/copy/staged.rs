//! A copy into a ledger settle created for it, its tables loaded side by
//! side in sessions of their own and moved in by one short transaction.
//!
//! In one transaction a single session does everything in turn: at 1M
//! operations on two cores, the rows took 5.0 s, what settle derives from
//! them 2.0 s, the keys 4.8 s, each waiting for the last (11.9 s, the
//! bound `pg_restore -1` of the same rows reaches). Here the tables are
//! made in a schema of their own ([`STAGING`]) with their keys lifted
//! ([`Deferred`]). Each table's rows go through a session of their own,
//! which then builds that table's keys while the next table's rows come
//! in; what settle derives from a table is filled and keyed in one more
//! session beside it (each operation's events streamed beside the events
//! themselves), and a foreign key is built as soon as both its tables are.
//!
//! Nobody reads the staged tables. Once every one is built, one
//! transaction drops the new ledger's empty tables and moves the staged
//! ones into their place, so the ledger goes from empty to whole in one
//! commit, as it did in one transaction. A copy that fails drops the
//! staging schema; one whose process died leaves it behind, and the next
//! copy drops it first. The move itself is [`super::staged_move`]'s.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};

use postgres::{Client, Transaction};

use super::defer::{Deferred, Foreign, build, lifted, streamed};
use super::table_in::{Encoder, copy_error};
use crate::error::{Error, Result};
use crate::store::copy::{CopyReport, Kind, RowSource, TABLES, Table, Value, refuse_unless_empty};
use crate::store::postgres::conn::Pg;
use crate::store::postgres::connect::SessionAttrs;
use crate::store::postgres::error::pg_error;

/// The schema a copy stages its tables in.
pub(crate) const STAGING: &str = "settle_copy_staging";

/// The advisory lock a copy holds while it stages.
const STAGING_LOCK: i64 = 0x05e7_71ea_c0b1;

/// The staging schema's comment: a schema of that name without it is not
/// settle's, and is never dropped.
pub(crate) const MARKER: &str =
    "settle copy: tables not yet moved into the ledger; the next copy drops them";

/// What goes to a table's loading session: bytes of its rows, then that
/// they ended (a channel closed without it means the copy stopped).
enum Chunk {
    Bytes(Vec<u8>),
    End,
}

/// Chunks of COPY data (a megabyte each) the source may be ahead of the
/// session that writes them.
const CHUNKS_AHEAD: usize = 4;

/// A table's rows on their way to the session that writes them.
struct Stream<'a> {
    encoder: Encoder<'a>,
    chunks: SyncSender<Chunk>,
}

impl Stream<'_> {
    fn push(&mut self, values: &[Value]) -> Result<()> {
        match self.encoder.push(values)? {
            Some(full) => self.send(Chunk::Bytes(full)),
            None => Ok(()),
        }
    }

    /// The last rows, and that they ended.
    fn end(mut self) -> Result<()> {
        let last = self.encoder.finish();
        self.send(Chunk::Bytes(last))?;
        self.send(Chunk::End)
    }

    /// A send fails only when the session stopped, with an error of its
    /// own that the copy reports instead.
    fn send(&self, chunk: Chunk) -> Result<()> {
        self.chunks.send(chunk).map_err(|_| {
            Error::ledger(
                self.encoder.shown,
                format!("the session writing {} stopped", self.encoder.table.name),
                "nothing was copied; copy again",
            )
        })
    }
}

/// Work on a staged table once its rows are in, in one transaction in a
/// session of its own: a table settle derives from it filled (`fill`),
/// then keys and indexes built.
struct Job {
    doing: &'static str,
    fill: Option<Fill>,
    keys: Vec<String>,
}

/// Fills a table settle derives from a staged one.
type Fill = fn(&mut Transaction<'_>) -> std::result::Result<u64, postgres::Error>;

fn fill_queue(tx: &mut Transaction<'_>) -> std::result::Result<u64, postgres::Error> {
    crate::store::postgres::schema::queue::record_all(tx)
}

impl Pg {
    /// [`crate::store::backend::Transfer::copy_from`] into a ledger this
    /// process created and nobody has written: staged, loaded side by
    /// side, moved in at once.
    pub(crate) fn copy_staged(&mut self, source: &mut RowSource) -> Result<CopyReport> {
        self.lock_staging()?;
        let copied = self.stage().and_then(|(target, deferred)| {
            let copied = self
                .load_staged(deferred, source)
                .and_then(|report| self.move_in(&target).map(|()| report));
            if copied.is_err() {
                // What the failure left staged goes; were this to fail
                // too, the next copy drops it.
                let _ = self
                    .client
                    .get_mut()
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS {STAGING} CASCADE"));
            }
            copied
        });
        // Released with the session anyway, if this fails.
        let _ = self
            .client
            .get_mut()
            .execute("SELECT pg_advisory_unlock($1)", &[&STAGING_LOCK]);
        copied
    }

    /// Whether this role may make the staging schema (CREATE on the
    /// database); a role that may only make tables copies in one
    /// transaction.
    pub(crate) fn may_stage(&mut self) -> Result<bool> {
        let shown = self.shown.clone();
        self.client
            .get_mut()
            .query_one(
                "SELECT has_database_privilege(current_database(), 'CREATE')",
                &[],
            )
            .and_then(|r| r.try_get(0))
            .map_err(|e| pg_error(&shown, "staging the copy", e))
    }

    /// Holds the database's staging schema for this copy, so a second copy
    /// into the same database does not take it for the leftovers of one
    /// that died, for as long as this session lives.
    fn lock_staging(&mut self) -> Result<()> {
        let shown = self.shown.clone();
        let held: bool = self
            .client
            .get_mut()
            .query_one("SELECT pg_try_advisory_lock($1)", &[&STAGING_LOCK])
            .and_then(|r| r.try_get(0))
            .map_err(|e| pg_error(&shown, "staging the copy", e))?;
        if held {
            return Ok(());
        }
        Err(Error::ledger(
            &shown,
            "another `settle copy` is writing this database",
            "wait for it to end: a database takes one copy at a time",
        ))
    }

    /// Checks the new ledger is empty, drops what a copy that died left
    /// staged, and makes the ledger's tables again in the staging schema,
    /// their keys lifted; the schema the new ledger is in.
    fn stage(&mut self) -> Result<(String, Deferred)> {
        let shown = self.shown.clone();
        let err = |e| pg_error(&shown, "staging the copy", e);
        let mut tx = self.client.get_mut().transaction().map_err(err)?;
        // Dropping a big leftover may outlast a console read's timeout.
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(err)?;
        let target: String = tx
            .query_one("SELECT current_schema()::text", &[])
            .and_then(|r| r.try_get(0))
            .map_err(err)?;
        refuse_unless_empty(&shown, EMPTY, |table| {
            tx.query_one(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), &[])
                .and_then(|r| r.try_get(0))
                .map_err(err)
        })?;
        let left = tx
            .query_opt(
                "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
                &[&STAGING],
            )
            .map_err(err)?;
        if let Some(row) = left {
            let comment: Option<String> = row.try_get(0).map_err(err)?;
            if comment.as_deref() != Some(MARKER) {
                return Err(Error::ledger(
                    &shown,
                    format!("holds a schema named {STAGING} that settle did not make"),
                    "rename it: a copy stages its tables in a schema of that name",
                ));
            }
            tx.batch_execute(&format!("DROP SCHEMA {STAGING} CASCADE"))
                .map_err(err)?;
        }
        tx.batch_execute(&format!(
            "CREATE SCHEMA {STAGING}; COMMENT ON SCHEMA {STAGING} IS '{MARKER}';
             SET LOCAL search_path = {STAGING};
             {}",
            crate::store::postgres::schema::tables::ledger_ddl()
        ))
        .map_err(err)?;
        let lifted = lifted();
        let deferred = Deferred::lift(&mut tx, &shown, &lifted)?;
        // Each table is committed once its rows are in, and the server's
        // autovacuum then went over it at once, taking CPU the copy's other
        // sessions needed, only to be cancelled by the build of its keys.
        // It comes back on as the tables move in.
        let quiet: Vec<String> = lifted
            .iter()
            .map(|t| format!("ALTER TABLE {t} SET (autovacuum_enabled = off)"))
            .collect();
        tx.batch_execute(&quiet.join(";\n")).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok((target, deferred))
    }

    /// A session of its own on the server this one writes to, with the
    /// staged tables first on its path and no statement timeout: a table
    /// takes as long as the source takes to read it.
    fn staging_session(&self) -> Result<Client> {
        let (mut client, _) = self.address.connect_as(
            &self.tls,
            SessionAttrs::Primary,
            self.address.timeout(),
            "connecting for the copy",
        )?;
        client
            .batch_execute(&format!(
                "SET statement_timeout = 0; SET search_path = {STAGING}"
            ))
            .map_err(|e| pg_error(&self.shown, "connecting for the copy", e))?;
        Ok(client)
    }

    /// Every table into the staging schema: each streamed table through a
    /// session of its own that then builds what comes after its rows,
    /// while the next one streams; each foreign key once both its tables
    /// are built; then the marks and the identities.
    fn load_staged(
        &mut self,
        mut deferred: Deferred,
        source: &mut RowSource,
    ) -> Result<CopyReport> {
        let shown = self.shown.clone();
        let shown = shown.as_path();
        let mut report = CopyReport::default();
        let mut event_ops = Some(keys(EVENT_OPS.name, &mut deferred));
        let mut foreign = deferred.take_foreign();
        let this = &*self;
        std::thread::scope(|s| {
            let mut running = Running::new();
            let mut fed = Vec::new();
            for (i, table) in TABLES.iter().enumerate() {
                let n = if streamed(table) {
                    let beside = (table.name == "events").then(|| event_ops.take()).flatten();
                    let jobs = jobs(table, &mut deferred);
                    this.load_table(s, table, jobs, beside, source, &mut running)
                } else {
                    this.load_small(table, source)
                };
                let n = match n {
                    Ok(n) => n,
                    // A session that failed stops the feeding, whose own
                    // error then only says the session went: the
                    // session's comes first.
                    Err(e) => return wait_all(&mut running).and(Err(e)),
                };
                report.tables.push((table.name, n));
                fed.push(table.name);
                // Each foreign key as soon as both its tables are in; one
                // that names a table no copy streams, after the last.
                let last = i + 1 == TABLES.len();
                let (ready, later) = std::mem::take(&mut foreign).into_iter().partition(|k| {
                    last || fed.contains(&k.table.as_str()) && fed.contains(&k.references.as_str())
                });
                foreign = later;
                for key in ready {
                    if let Err(e) = this.foreign_key(s, key, &mut running) {
                        return wait_all(&mut running).and(Err(e));
                    }
                }
            }
            wait_all(&mut running)
        })?;
        let err = |e| pg_error(shown, "recording the queue and each operation's events", e);
        let mut tx = self.client.get_mut().transaction().map_err(err)?;
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = 0; SET LOCAL search_path = {STAGING}"
        ))
        .map_err(err)?;
        crate::store::postgres::schema::queue::mark_past_all(&mut tx).map_err(err)?;
        super::transfer::move_identities(&mut tx, shown, &report)?;
        tx.commit().map_err(err)?;
        Ok(report)
    }

    /// A foreign key in a session of its own, once the sessions building
    /// its two tables are done (taken out of `running`, with what they
    /// build).
    fn foreign_key<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        key: Foreign,
        running: &mut Running<'scope>,
    ) -> Result<()> {
        let shown: &'env Path = &self.shown;
        let mut client = self.staging_session()?;
        let tables = [key.table.clone(), key.references.clone()];
        let (before, rest): (Running<'scope>, Running<'scope>) = std::mem::take(running)
            .into_iter()
            .partition(|(built, _)| built.iter().any(|t| tables.contains(t)));
        *running = rest;
        let mut builds: Vec<String> = before.iter().flat_map(|(t, _)| t.clone()).collect();
        builds.extend(tables);
        running.push((
            builds,
            s.spawn(move || {
                wait_all(&mut { before })?;
                run(
                    &mut client,
                    shown,
                    Job {
                        doing: "building the new ledger's foreign keys",
                        fill: None,
                        keys: vec![key.sql],
                    },
                )
            }),
        ));
        Ok(())
    }
}

/// The new ledger must hold nothing, as any copy's destination.
pub(crate) const EMPTY: &str =
    "copy into a new ledger: a new file, or an empty database (`settle init`)";

/// What follows the rows of `table`, each in a session of its own: its
/// keys, and beside them the queue's members filled from the operations
/// then keyed.
fn jobs(table: &Table, deferred: &mut Deferred) -> Vec<Job> {
    let mut jobs = vec![keys(table.name, deferred)];
    if table.name == "operations" {
        jobs.push(Job {
            doing: "recording the queue",
            fill: Some(fill_queue),
            keys: deferred.take("settle_queue"),
        });
    }
    jobs
}

fn keys(table: &str, deferred: &mut Deferred) -> Job {
    Job {
        doing: "building the new ledger's keys and indexes",
        fill: None,
        keys: deferred.take(table),
    }
}

/// settle's map of each operation's events, written beside the events it
/// is made of: their `(op_id, id)`, for those with an operation.
const EVENT_OPS: Table = Table {
    name: "settle_event_ops",
    columns: &[("op_id", Kind::Int), ("id", Kind::Int)],
    order: "op_id, id",
    console: true,
    identity: false,
    added_later: &[],
    made_on_use: false,
};

/// The sessions still building, each with the tables it builds.
type Running<'scope> = Vec<(Vec<String>, ScopedJoinHandle<'scope, Result<()>>)>;

/// Waits for every session of `running`; the first failure among them.
fn wait_all(running: &mut Running<'_>) -> Result<()> {
    let mut first = Ok(());
    for (_, handle) in running.drain(..) {
        let done = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if first.is_ok() {
            first = done;
        }
    }
    first
}

impl Pg {
    /// One streamed table into the staging schema: a session of its own
    /// writes the rows `source` streams (encoded here, written there) and
    /// then does the first of `jobs`; each other job waits for the rows in
    /// a session of its own. `beside`, for the events: settle's map of
    /// each operation's events streamed in one more session, then keyed.
    /// Every session goes to `running`; the rows streamed.
    fn load_table<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        table: &'env Table,
        jobs: Vec<Job>,
        beside: Option<Job>,
        source: &mut RowSource,
        running: &mut Running<'scope>,
    ) -> Result<u64> {
        let mut main = self.staged_stream(s, table, jobs, running)?;
        let mut map = match beside {
            Some(job) => Some(self.staged_stream(s, &EVENT_OPS, vec![job], running)?),
            None => None,
        };
        let at = |column| table.columns.iter().position(|(c, _)| *c == column);
        let (id, op) = (at("id").unwrap_or(0), at("op_id").unwrap_or(0));
        let mut pair = [Value::Null, Value::Null];
        let n = source(table, &mut |values| {
            main.push(values)?;
            if let Some(map) = map.as_mut().filter(|_| values[op] != Value::Null) {
                pair[0].clone_from(&values[op]);
                pair[1].clone_from(&values[id]);
                map.push(&pair)?;
            }
            Ok(())
        })?;
        main.end()?;
        if let Some(map) = map {
            map.end()?;
        }
        Ok(n)
    }

    /// A session of its own for `table`'s rows, which then does the first
    /// of `jobs`; each other job waits for the rows in a session of its
    /// own. The stream that feeds it.
    fn staged_stream<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        table: &'env Table,
        jobs: Vec<Job>,
        running: &mut Running<'scope>,
    ) -> Result<Stream<'env>> {
        let shown: &'env Path = &self.shown;
        let mut jobs = jobs.into_iter();
        let first = jobs.next();
        let mut told = Vec::new();
        for job in jobs {
            let session = self.staging_session()?;
            let (tell, loaded) = sync_channel(1);
            told.push(tell);
            running.push((
                vec![table.name.to_string()],
                s.spawn(move || after_rows(session, shown, loaded, job)),
            ));
        }
        let mut loader = self.staging_session()?;
        let encoder = Encoder::new(&mut loader, shown, table)?;
        let sql = encoder.sql.clone();
        let (chunks, rows) = sync_channel(CHUNKS_AHEAD);
        running.push((
            vec![table.name.to_string()],
            s.spawn(move || load(loader, shown, table, &sql, rows, told, first)),
        ));
        Ok(Stream { encoder, chunks })
    }

    /// A table the copy does not stream ([`super::transfer::copy_small`]),
    /// written in this session, in a transaction of its own.
    fn load_small(&self, table: &Table, source: &mut RowSource) -> Result<u64> {
        let shown = self.shown.as_path();
        let doing = format!("writing {}", table.name);
        let err = |e| pg_error(shown, &doing, e);
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(err)?;
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = 0; SET LOCAL search_path = {STAGING}"
        ))
        .map_err(err)?;
        let n = super::transfer::copy_small(&mut tx, shown, table, source)?;
        tx.commit().map_err(err)?;
        Ok(n)
    }
}

/// A streamed table's session: writes the chunks `rows` brings through
/// one COPY and commits once they ended, tells the sessions waiting for
/// the rows (`told`), then does `first`. A channel closed before the end
/// means the copy stopped: the rows are rolled back, and the error that
/// stopped it is the feeding's.
fn load(
    mut client: Client,
    shown: &Path,
    table: &Table,
    sql: &str,
    rows: Receiver<Chunk>,
    told: Vec<SyncSender<()>>,
    first: Option<Job>,
) -> Result<()> {
    let doing = format!("writing {}", table.name);
    let err = |e| pg_error(shown, &doing, e);
    let mut tx = client.transaction().map_err(err)?;
    let mut writer = tx.copy_in(sql).map_err(err)?;
    let mut ended = false;
    for chunk in rows {
        match chunk {
            Chunk::Bytes(bytes) => writer
                .write_all(&bytes)
                .map_err(|e| copy_error(shown, &doing, e))?,
            Chunk::End => {
                ended = true;
                break;
            }
        }
    }
    if !ended {
        return Ok(());
    }
    writer.finish().map_err(err)?;
    tx.commit().map_err(err)?;
    for tell in told {
        // A session that is gone failed, and says so itself.
        let _ = tell.send(());
    }
    first.map_or(Ok(()), |job| run(&mut client, shown, job))
}

/// A job's session: waits until its table's rows are in, then does it.
fn after_rows(mut client: Client, shown: &Path, loaded: Receiver<()>, job: Job) -> Result<()> {
    match loaded.recv() {
        Ok(()) => run(&mut client, shown, job),
        // The rows never came: the copy stopped, and says why elsewhere.
        Err(_) => Ok(()),
    }
}

/// One job in one transaction.
fn run(client: &mut Client, shown: &Path, job: Job) -> Result<()> {
    let err = |e| pg_error(shown, job.doing, e);
    let mut tx = client.transaction().map_err(err)?;
    if let Some(fill) = job.fill {
        fill(&mut tx).map_err(err)?;
    }
    build(&mut tx, shown, &job.keys)?;
    tx.commit().map_err(err)
}
