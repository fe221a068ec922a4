//! Adopting a service's PostgreSQL database, or bringing an adopted one to
//! this schema, without making the service wait: settle's own tables,
//! columns and triggers in short transactions that give up a lock after
//! [`SERVICE_WAIT`] and try again; the retired NOTIFY triggers dropped the
//! same way; the retired indexes dropped and every index built
//! `CONCURRENTLY`, which takes no lock a service's insert or update waits
//! for. Never touches a row a
//! service or an operator wrote.

use std::path::Path;
use std::time::{Duration, Instant};

use postgres::Client;

use super::objects;
use super::tables::{CONSOLE_TABLES, Inspection, SCHEMA_VERSION, SETTLE_COLUMNS, inspect};
use crate::error::{Error, Fault, Result};
use crate::store::open::Progress;
use crate::store::postgres::error::{fault_of, pg_error};

/// The session lock two adopting processes share: the second waits, then
/// finds the work done. Taken with `pg_try_advisory_lock` between pauses,
/// never by a statement left waiting: an index built concurrently waits
/// for every open snapshot, a waiting statement's too.
const ADOPTION_LOCK: i64 = 0x05e7_71ea_d0b7;

/// The longest a service's statement may queue behind a lock adoption
/// asks for (a table's ACCESS EXCLUSIVE lock to add a column or drop a
/// trigger): adoption gives up the lock after this and tries again.
const SERVICE_WAIT: Duration = Duration::from_millis(100);

/// How long adoption keeps trying for one such lock before it says the
/// service is too busy to adopt now.
const KEEP_TRYING: Duration = Duration::from_secs(60);

/// Adds what `inspect` found missing and drops what is retired, a step at
/// a time; None when another process did it while this one waited.
pub(crate) fn adopt(
    client: &mut Client,
    shown: &Path,
    wait: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<String>> {
    let err = |doing: &str, e| pg_error(shown, doing, e);
    hold_adoption_lock(client, shown, wait)?;
    // Index builds on a big ledger take longer than a statement may.
    let adopted = client
        .batch_execute("SET statement_timeout = 0; SET lock_timeout = 0")
        .map_err(|e| err("starting the adoption", e))
        .and_then(|()| steps(client, shown, progress));
    let unlocked = client
        .execute("SELECT pg_advisory_unlock($1)", &[&ADOPTION_LOCK])
        .map_err(|e| err("ending the adoption", e));
    let adopted = adopted?;
    unlocked?;
    Ok(adopted)
}

fn steps(
    client: &mut Client,
    shown: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<String>> {
    let found = inspect(client, shown)?;
    if !found.needs_upgrade() {
        return Ok(None);
    }
    let builds = index_builds(&found);
    let total = builds.len() + 4;
    let mut step = |name: &str, done: usize| {
        progress(Progress {
            step: name.to_string(),
            done,
            total,
        })
    };
    step("adding the console tables", 0);
    briefly(
        client,
        shown,
        "adding the console tables",
        &own_tables(&found),
    )?;
    step("dropping the change-notification triggers", 1);
    for (trigger, table) in &found.retired {
        let sql = format!("DROP TRIGGER IF EXISTS {trigger} ON {table}");
        briefly(client, shown, &format!("dropping {trigger}"), &sql)?;
    }
    if !found.retired.is_empty() {
        let sql = format!("DROP FUNCTION IF EXISTS {}", objects::RETIRED_FUNCTION);
        briefly(client, shown, "dropping settle_notify()", &sql)?;
    }
    fill_then_retire(client, shown, &found, &mut |what| step(what, 2))?;
    for (i, (name, on, invalid)) in builds.iter().enumerate() {
        let doing = format!("building index {name}");
        step(&doing, i + 3);
        if *invalid {
            // Left by a build that failed: it holds no usable entries and
            // every write maintains it, so it is rebuilt.
            client
                .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
                .map_err(|e| pg_error(shown, &doing, e))?;
        }
        client
            .batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {on}"
            ))
            .map_err(|e| pg_error(shown, &doing, e))?;
    }
    step("committing", total - 1);
    let version = format!(
        "DELETE FROM settle_schema; INSERT INTO settle_schema (version) VALUES ({SCHEMA_VERSION})"
    );
    briefly(client, shown, "setting the schema version", &version)?;
    Ok(Some(adoption_line(shown, &found)))
}

/// Fills settle's own tables that take over from retired indexes, in
/// short transactions, then drops those indexes without a lock a service's
/// write waits for: each fill is read through the index it replaces.
fn fill_then_retire(
    client: &mut Client,
    shown: &Path,
    found: &Inspection,
    step: &mut dyn FnMut(&str),
) -> Result<()> {
    if !found.queue {
        super::queue::fill(client, KEEP_TRYING)
            .map_err(|e| pg_error(shown, "recording the triage queue", e))?;
    }
    if !found.event_map {
        step("recording each operation's events");
        super::event_ops::fill(client, step)
            .map_err(|e| pg_error(shown, "recording each operation's events", e))?;
    }
    for name in &found.retired_indexes {
        client
            .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            .map_err(|e| pg_error(shown, &format!("dropping {name}"), e))?;
    }
    Ok(())
}

/// Takes [`ADOPTION_LOCK`], trying again for up to `wait` (at least the
/// time an adoption usually takes: another process may be building).
fn hold_adoption_lock(client: &mut Client, shown: &Path, wait: Duration) -> Result<()> {
    let until = Instant::now() + wait.max(KEEP_TRYING);
    loop {
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&ADOPTION_LOCK])
            .and_then(|row| row.try_get(0))
            .map_err(|e| pg_error(shown, "waiting for the adoption lock", e))?;
        if got {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(Error::Busy {
                path: shown.to_path_buf(),
                waited: wait.max(KEEP_TRYING),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// settle's own tables, the columns it adds to the console tables, and
/// the append-only triggers it lacks, as one transaction's statements.
fn own_tables(found: &Inspection) -> String {
    let mut sql = format!(
        "{CONSOLE_TABLES}\n{}\n{}\n{};\n",
        super::queue::QUEUE_TABLES,
        super::event_ops::EVENT_TABLES,
        super::queue::first_mark()
    );
    for (table, column, definition) in SETTLE_COLUMNS {
        // ALTER TABLE locks the table even when the column is there.
        if !found.missing.contains(&format!("column {table}.{column}"))
            && !found.missing_console_tables.contains(&table)
        {
            continue;
        }
        sql.push_str(&format!(
            "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {definition};\n"
        ));
    }
    sql.push_str(objects::FUNCTIONS);
    for (name, create) in objects::triggers() {
        if found.missing.contains(&name) {
            sql.push_str(&create);
            sql.push_str(";\n");
        }
    }
    sql
}

/// Runs `sql` in one transaction that waits at most [`SERVICE_WAIT`] for
/// a lock, trying again after a pause until [`KEEP_TRYING`] has passed: a
/// service's statement queued behind the lock waits no longer than that.
fn briefly(client: &mut Client, shown: &Path, doing: &str, sql: &str) -> Result<()> {
    let until = Instant::now() + KEEP_TRYING;
    let wrapped = format!(
        "BEGIN; SET LOCAL lock_timeout = {}; {sql}; COMMIT;",
        SERVICE_WAIT.as_millis()
    );
    loop {
        match client.batch_execute(&wrapped) {
            Ok(()) => return Ok(()),
            Err(e) if fault_of(&e) == Some(Fault::Busy) && Instant::now() < until => {
                client
                    .batch_execute("ROLLBACK")
                    .map_err(|e| pg_error(shown, doing, e))?;
                std::thread::sleep(SERVICE_WAIT * 2);
            }
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK");
                return Err(pg_error(shown, doing, e).busy_after(KEEP_TRYING));
            }
        }
    }
}

/// The indexes to build: name, definition, and whether an INVALID one of
/// that name is there (a failed concurrent build leaves one).
fn index_builds(found: &Inspection) -> Vec<(&'static str, String, bool)> {
    objects::indexes()
        .into_iter()
        .filter(|(name, _)| found.missing.iter().any(|m| m == name))
        .map(|(name, on)| {
            let invalid = found.invalid_indexes.iter().any(|i| i == name);
            (name, on, invalid)
        })
        .collect()
}

/// The one line an adoption prints, naming everything it added or dropped.
fn adoption_line(shown: &Path, found: &Inspection) -> String {
    let mut added: Vec<String> = found
        .missing_console_tables
        .iter()
        .map(|t| format!("table {t}"))
        .collect();
    let (verb, versions) = match found.version {
        0 => ("adopted", format!(" (schema 0 -> {SCHEMA_VERSION})")),
        SCHEMA_VERSION => ("repaired", String::new()),
        v => ("upgraded", format!(" (schema {v} -> {SCHEMA_VERSION})")),
    };
    if found.version == 0 {
        added.push("indexes, append-only triggers on settle's own tables".to_string());
    } else if !found.missing.is_empty() {
        // Someone dropped settle's objects: name each, so an auditor sees it.
        added.push(format!("the missing {}", found.missing.join(", ")));
    }
    let mut line = format!("settle: {verb} {}{versions}: ", shown.display());
    if !added.is_empty() {
        line.push_str(&format!("added {}; ", added.join(", ")));
    }
    let mut dropped: Vec<&str> = found.retired.iter().map(|(t, _)| *t).collect();
    dropped.extend(&found.retired_indexes);
    if !dropped.is_empty() {
        line.push_str(&format!(
            "dropped {} from the service's tables; ",
            dropped.join(", ")
        ));
    }
    line.push_str("no service rows changed");
    line
}
