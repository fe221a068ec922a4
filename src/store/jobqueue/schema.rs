//! settle's own schema beside a job queue's tables: `settle.decisions`
//! (append-only, hash-chained), `settle.retry_requests`, `settle.op_types`
//! and `settle.settle_probes`, the same tables and append-only triggers as
//! a ledger's, made when the database is first opened to write (adopted).
//! Never a table, index, trigger
//! or function on the engine's side: the engine's migrations, run later,
//! find their own objects as they left them.

use postgres::Client;

use super::session::JobQueue;
use crate::error::Result;
use crate::store::postgres::console_objects;
use crate::store::postgres::schema::CONSOLE_TABLES;

/// Makes settle's schema unless it is there; the session's search path
/// puts `settle` first, so the shared DDL creates its tables there.
/// Whether this call made it.
fn create(client: &mut Client) -> std::result::Result<bool, postgres::Error> {
    let mut tx = client.transaction()?;
    // Two first decisions at once: the second waits, then finds it made.
    tx.batch_execute("SELECT pg_advisory_xact_lock(hashtext('settle schema'))")?;
    let there: bool = tx
        .query_one("SELECT to_regclass('settle.decisions') IS NOT NULL", &[])?
        .try_get(0)?;
    if !there {
        tx.batch_execute("CREATE SCHEMA IF NOT EXISTS settle")?;
        tx.batch_execute(CONSOLE_TABLES)?;
        tx.batch_execute(&console_objects())?;
        tx.batch_execute(
            "CREATE INDEX settle_decisions_op_id ON settle.decisions (op_id, id);
             CREATE INDEX settle_retry_requests_op_id ON settle.retry_requests (op_id, id)",
        )?;
    }
    tx.commit()?;
    Ok(!there)
}

impl JobQueue {
    /// settle's schema, made now unless it is there; whether this made it.
    pub(super) fn ensure_settle_schema(&mut self) -> Result<bool> {
        if self.tables().console {
            return Ok(false);
        }
        let made = self.with_client("making settle's schema", create)?;
        self.inspect()?;
        Ok(made)
    }
}
