//! Decisions in a PostgreSQL ledger: one transaction that takes the trail's
//! write lock, in which [`crate::store::decide`] rereads the operation
//! (locked `FOR UPDATE`), checks the version the operator saw, judges the
//! rules on the fresh row and writes, as on every backend; this file spells
//! each step in PostgreSQL's SQL. Serialization failures and deadlocks are run again a bounded
//! number of times; a connection lost during COMMIT is settled by looking
//! for the decision after reconnecting, never guessed.

use chrono::{DateTime, Utc};
use postgres::{Client, GenericClient};

use super::conn::Pg;
use super::error::{fault_of, pg_error};
use super::filter::PgSql;
use super::history::load_detail;
use crate::domain::{DecisionDraft, DecisionReceipt, Declarations, OperationDetail, OperationId};
use crate::error::{Error, Fault, Result};
use crate::store::backend::Decisions;
use crate::store::chain::GENESIS;
use crate::store::decide::{self, DecisionRow, DecisionTx, StateChange, Written, is_row_outcome};
use crate::store::filter::is_queue_candidate;
use crate::store::tables::Tables;

/// How many times a decision's transaction runs before a serialization
/// failure or a deadlock is reported (as [`Error::Busy`]: another writer
/// was in the way and nothing was written).
const ATTEMPTS: usize = 3;

/// Why a decision transaction did not commit.
enum Failure {
    /// settle's own verdict (refused, conflict, not found): nothing written.
    Settle(Error),
    /// PostgreSQL failed while doing what the text names; maybe worth
    /// running again (a broken race: [`Fault::Conflict`]).
    Pg(&'static str, postgres::Error),
    /// The connection broke after COMMIT was sent: the decisions may or may
    /// not be in. `last` is the newest one written, `outcomes` what the
    /// batch would report if they are.
    CommitLost {
        last: Written,
        outcomes: Vec<Result<DecisionReceipt>>,
    },
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Settle(e)
    }
}

type Fallible<T> = std::result::Result<T, Failure>;

fn pg(doing: &'static str) -> impl Fn(postgres::Error) -> Failure {
    move |e| Failure::Pg(doing, e)
}

/// One decision alone (its error is the answer) or a batch (each row's
/// error is kept in its place and the rest go on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    One,
    Many,
}

impl Decisions for Pg {
    /// A connection lost during COMMIT gives the receipt when the decision
    /// is found after reconnecting, else [`Error::ConnectionLost`].
    fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        let outcomes = self.decide(std::slice::from_ref(draft), now, Batch::One)?;
        decide::only_outcome(outcomes, &self.shown, draft)
    }

    /// Each row in its own savepoint, so a refused or conflicted row is
    /// skipped without undoing the rest.
    fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        self.decide(drafts, now, Batch::Many)
    }

    /// No lock either: a preview.
    fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        let mut client = self.client.borrow_mut();
        let detail = load_detail(&mut *client, draft.op_id, self.tables, self.spelling())
            .map_err(|e| pg_error(&self.shown, "reading the operation", e))?;
        decide::judge_only(detail, &self.shown, &self.declared, draft, now)
    }
}

impl Pg {
    /// Runs the decision transaction, again after a serialization failure
    /// or a deadlock, up to [`ATTEMPTS`] times.
    fn decide(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
        batch: Batch,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        let mut tries = 0;
        loop {
            tries += 1;
            self.reconnect_if_closed()?;
            let wait_ms = self.wait.as_millis().clamp(1, i32::MAX as u128);
            let (shown, declared) = (self.shown.clone(), self.declared.clone());
            let outcome = run(
                self.writer()?,
                (&shown, &declared),
                wait_ms,
                drafts,
                now,
                batch,
            );
            match outcome {
                Ok(outcomes) => {
                    super::connect::writes::committed();
                    return Ok(outcomes);
                }
                Err(Failure::Settle(e)) => return Err(e),
                // A connection that died before COMMIT took the
                // transaction with it: nothing was written, so run it
                // again on a fresh one.
                Err(Failure::Pg(_, e))
                    if (retryable(&e) || self.writer_closed()) && tries < ATTEMPTS =>
                {
                    continue;
                }
                Err(Failure::Pg(doing, e)) => return Err(self.write_err(doing, e)),
                Err(Failure::CommitLost { last, outcomes }) => {
                    return self.after_lost_commit(&last).map(|()| outcomes);
                }
            }
        }
    }

    /// A write's PostgreSQL error said as settle's: a lock wait past the
    /// ledger's wait, or writers still in each other's way after
    /// [`ATTEMPTS`] runs, as [`Error::Busy`] (nothing written, try again).
    pub(super) fn write_err(&self, doing: &str, e: postgres::Error) -> Error {
        if fault_of(&e) == Some(Fault::Busy) {
            return Error::Busy {
                path: self.shown.clone(),
                waited: self.wait,
            };
        }
        if retryable(&e) {
            // Not a wait that ran out: other writers kept getting in the
            // way, so say "holds the lock" without a duration.
            return Error::Busy {
                path: self.shown.clone(),
                waited: std::time::Duration::ZERO,
            };
        }
        pg_error(&self.shown, doing, e)
    }

    /// A fresh connection when the last one broke, so a console that lost
    /// its connection decides again without being restarted.
    pub(super) fn reconnect_if_closed(&mut self) -> Result<()> {
        self.writer().map(|_| ())
    }

    /// Settles a COMMIT whose answer never came: reconnects, waits for the
    /// trail's write lock (held by the old transaction until it committed or
    /// rolled back, so what we read next is final), and looks for the newest
    /// decision written by its id and chain hash. Found: recorded (`Ok`).
    pub(super) fn after_lost_commit(&mut self, last: &Written) -> Result<()> {
        let path = self.shown.clone();
        let lost = |checked| Error::ConnectionLost {
            path: path.clone(),
            checked,
        };
        if self.reconnect_writer(self.wait).is_err() {
            return Err(lost(false));
        }
        let wait_ms = self.wait.as_millis().clamp(1, i32::MAX as u128);
        let Ok(client) = self.writer() else {
            return Err(lost(false));
        };
        let found = (|| -> std::result::Result<bool, postgres::Error> {
            let mut tx = client.transaction()?;
            tx.batch_execute(&format!(
                "SET LOCAL lock_timeout = {wait_ms}; LOCK TABLE decisions IN SHARE ROW EXCLUSIVE MODE"
            ))?;
            let found = tx
                .query_opt(
                    "SELECT 1 FROM decisions WHERE id = $1 AND chain_hash = $2",
                    &[&last.id, &last.chain_hash],
                )?
                .is_some();
            tx.rollback()?;
            Ok(found)
        })();
        match found {
            Ok(true) => Ok(()),
            Ok(false) => Err(lost(true)),
            Err(_) => Err(lost(false)),
        }
    }
}

/// A serialization failure or a deadlock: the transaction may run again.
fn retryable(e: &postgres::Error) -> bool {
    fault_of(e) == Some(Fault::Conflict)
}

/// One run of the decision transaction.
fn run(
    client: &mut Client,
    (shown, declared): (&std::path::Path, &Declarations),
    wait_ms: u128,
    drafts: &[DecisionDraft],
    now: DateTime<Utc>,
    batch: Batch,
) -> std::result::Result<Vec<Result<DecisionReceipt>>, Failure> {
    let mut tx = client
        .transaction()
        .map_err(pg("starting the decision transaction"))?;
    // The lock serialises writers of decisions, as SQLite's write lock
    // does: each links to the newest one, so two at once would fork the
    // chain. Taken first, before any row lock, so deciders never deadlock
    // each other. `lock_timeout` bounds every wait by the ledger's wait; a
    // statement timeout set for reads must not cut a decision short.
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {wait_ms}; SET LOCAL statement_timeout = 0;
         LOCK TABLE decisions IN SHARE ROW EXCLUSIVE MODE"
    ))
    .map_err(pg("waiting for the audit trail's write lock"))?;
    let mut outcomes = Vec::with_capacity(drafts.len());
    let mut last = None;
    for draft in drafts {
        // A savepoint per row: a rule that refuses after the decision row
        // went in (a worker claimed the retry meanwhile) takes back that
        // row only.
        let mut row = tx
            .savepoint("settle_row")
            .map_err(pg("starting a row of the batch"))?;
        match decide::decide(&mut Tx { tx: &mut row }, shown, declared, draft, now) {
            Ok((receipt, written)) => {
                row.commit().map_err(pg("keeping a row of the batch"))?;
                last = Some(written);
                outcomes.push(Ok(receipt));
            }
            Err(Failure::Settle(e)) if batch == Batch::Many && is_row_outcome(&e) => {
                row.rollback().map_err(pg("taking back a refused row"))?;
                outcomes.push(Err(e));
            }
            Err(f) => return Err(f),
        }
    }
    let Some(last) = last else {
        // Nothing written: nothing to commit, nothing to lose.
        tx.rollback()
            .map_err(pg("ending the decision transaction"))?;
        return Ok(outcomes);
    };
    match tx.commit() {
        Ok(()) => Ok(outcomes),
        // No answer from the server (as opposed to its error): the COMMIT
        // may have happened.
        Err(e) if e.as_db_error().is_none() => Err(Failure::CommitLost { last, outcomes }),
        Err(e) => Err(Failure::Pg("committing the decision", e)),
    }
}

/// A decision's transaction on PostgreSQL: the trail's lock is already
/// held; each operation is locked `FOR UPDATE` before it is read.
struct Tx<'a, C: GenericClient> {
    tx: &'a mut C,
}

impl<C: GenericClient> DecisionTx for Tx<'_, C> {
    type Fail = Failure;

    fn fresh_detail(&mut self, op: OperationId) -> Fallible<Option<OperationDetail>> {
        // `::bigint` here and on the service's other columns: a service may
        // have made its ids and versions `integer`, which an i64 cannot bind
        // to. The row lock first, then the read: what is judged is what no
        // other writer can change before we commit.
        let locked = self
            .tx
            .query_opt(
                "SELECT 1 FROM operations WHERE id = $1::bigint FOR UPDATE",
                &[&op.0],
            )
            .map_err(pg("locking the operation"))?;
        if locked.is_none() {
            return Ok(None);
        }
        load_detail(self.tx, op, Tables::ALL, &PgSql::ALL).map_err(pg("reading the operation"))
    }

    fn chain_head(&mut self) -> Fallible<String> {
        head(self.tx).map_err(pg("writing the decision"))
    }

    fn next_decision_id(&mut self) -> Fallible<i64> {
        self.tx
            .query_one(decide::NEXT_DECISION_ID, &[])
            .and_then(|r| r.try_get(0))
            .map_err(pg("writing the decision"))
    }

    fn insert_decision(&mut self, row: &DecisionRow) -> Fallible<()> {
        insert_decision(self.tx, row).map_err(pg("writing the decision"))
    }

    fn change_state(&mut self, change: &StateChange) -> Fallible<Option<i64>> {
        let changed = self
            .tx
            .query_opt(
                "UPDATE operations SET state = $1, result_id = $2, updated_at = $3,
                     version = version + 1
                 WHERE id = $4::bigint AND version = $5::bigint
                 RETURNING version::bigint",
                &[
                    &change.to_state.as_str(),
                    &change.result_id,
                    &change.decided,
                    &change.op.0,
                    &change.version,
                ],
            )
            .map_err(pg("changing the operation's state"))?;
        if changed.is_some() && is_queue_candidate(change.to_state) {
            // A reopen or a cancelled retry moves it back into the queue,
            // with no event for the queue's catch-up to see.
            super::schema::queue::add(self.tx, change.op.0)
                .map_err(pg("recording the triage queue"))?;
        }
        changed
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(pg("reading the operation's new version"))
    }

    fn queue_retry(&mut self, row: &DecisionRow, idem_key: &str) -> Fallible<i64> {
        queue_retry(self.tx, row, idem_key).map_err(pg("queueing the retry request"))
    }

    fn cancel_retry(&mut self, request: Option<i64>) -> Fallible<bool> {
        let cancelled = self
            .tx
            .execute(
                "UPDATE retry_requests SET status = 'cancelled'
                 WHERE id = $1 AND status = 'queued'",
                &[&request],
            )
            .map_err(pg("cancelling the retry request"))?;
        Ok(cancelled == 1)
    }
}

/// Inserts the decision row into `decisions` (a job queue's session finds
/// settle's own there).
pub(crate) fn insert_decision(
    tx: &mut impl GenericClient,
    row: &DecisionRow,
) -> std::result::Result<(), postgres::Error> {
    tx.execute(
        &decide::insert_decision_sql('$'),
        &[
            &row.id,
            &row.op_id.0,
            &row.kind.as_str(),
            &row.from_state.as_str(),
            &row.to_state.as_str(),
            &row.result_id,
            &row.evidence,
            &row.note,
            &row.operator,
            &row.decided,
            &row.op_version,
            &row.undoes.map(|d| d.0),
            &row.extra_attempt,
            &row.chain_hash,
        ],
    )?;
    Ok(())
}

/// Queues the retry request of the decision `row` in `retry_requests` (a
/// job queue's session finds settle's own there); the request's id.
pub(crate) fn queue_retry(
    tx: &mut impl GenericClient,
    row: &DecisionRow,
    idem_key: &str,
) -> std::result::Result<i64, postgres::Error> {
    tx.query_one(
        "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by,
             status, decision_id)
         VALUES ($1, $2, $3, $4, 'queued', $5)
         RETURNING id",
        &[
            &row.op_id.0,
            &idem_key,
            &row.decided,
            &row.operator,
            &row.id,
        ],
    )?
    .try_get(0)
}

/// The chain hash of the newest decision, where the next one links on. A
/// newest row without a hash (written with plain SQL) restarts the chain
/// from the genesis, as on SQLite; `--verify` reports it.
pub(crate) fn head(tx: &mut impl GenericClient) -> std::result::Result<String, postgres::Error> {
    let newest = tx.query_opt(
        "SELECT chain_hash FROM decisions ORDER BY id DESC LIMIT 1",
        &[],
    )?;
    Ok(match newest {
        Some(row) => row.try_get::<_, Option<String>>(0)?,
        None => None,
    }
    .unwrap_or_else(|| GENESIS.to_string()))
}
