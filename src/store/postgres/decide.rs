//! Decisions in a PostgreSQL ledger: one transaction that takes the trail's
//! write lock, rereads the operation `FOR UPDATE`, checks the version the
//! operator saw, judges the contract's rules on the fresh row (the very
//! functions the SQLite backend calls) and writes the decision row (chained
//! to the one before it), the state change and the retry request together,
//! or nothing. Serialization failures and deadlocks are run again a bounded
//! number of times; a connection lost during COMMIT is settled by looking
//! for the decision after reconnecting, never guessed.

use chrono::{DateTime, SubsecRound, Utc};
use postgres::{Client, GenericClient};

use super::conn::Pg;
use super::history::load_detail;
use crate::domain::rules::Rule;
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, DecisionReceipt, OperationDetail, format_time,
};
use crate::error::{Error, Result};
use crate::store::chain::{self, Cell, GENESIS};
use crate::store::sqlite::decide::{Judged, check_version, judge, new_result_id, non_empty};

/// How many times a decision's transaction runs before a serialization
/// failure or a deadlock is reported (as [`Error::Busy`]: another writer
/// was in the way and nothing was written).
const ATTEMPTS: usize = 3;

/// SQLSTATEs that mean "run the transaction again": serialization failure,
/// deadlock detected.
const RETRYABLE: [&str; 2] = ["40001", "40P01"];

/// SQLSTATE of a lock wait cut off by `lock_timeout`.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// A decision the transaction wrote, enough to find it again after the
/// connection broke during COMMIT: its id and its chain hash, which covers
/// every column of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    pub(super) id: i64,
    pub(super) chain_hash: String,
}

/// Why a decision transaction did not commit.
enum Failure {
    /// settle's own verdict (refused, conflict, not found): nothing written.
    Settle(Error),
    /// PostgreSQL failed while doing what the text names; maybe worth
    /// running again ([`RETRYABLE`]).
    Pg(&'static str, postgres::Error),
    /// The connection broke after COMMIT was sent: the decisions may or may
    /// not be in. `last` is the newest one written, `outcomes` what the
    /// batch would report if they are.
    CommitLost {
        last: Written,
        outcomes: Vec<Result<DecisionReceipt>>,
    },
}

fn pg(doing: &'static str) -> impl Fn(postgres::Error) -> Failure {
    move |e| Failure::Pg(doing, e)
}

/// Whether `e` concerns one row only (a batch goes on without it), as on
/// SQLite (`sqlite/decide_bulk.rs`).
fn is_row_outcome(e: &Error) -> bool {
    matches!(
        e,
        Error::Refused { .. } | Error::VersionConflict { .. } | Error::NotFound { .. }
    )
}

/// One decision alone (its error is the answer) or a batch (each row's
/// error is kept in its place and the rest go on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    One,
    Many,
}

impl Pg {
    /// Records `draft` at `now`, or refuses it with [`Error::Refused`],
    /// [`Error::VersionConflict`] or [`Error::Busy`] (a lock held past the
    /// ledger's wait), as on SQLite. A connection lost during COMMIT gives
    /// the receipt when the decision is found after reconnecting, else
    /// [`Error::ConnectionLost`].
    pub fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        self.ensure_writable()?;
        let mut outcomes = self.decide(std::slice::from_ref(draft), now, Batch::One)?;
        outcomes.pop().unwrap_or_else(|| {
            Err(Error::NotFound {
                path: self.shown.clone(),
                what: draft.op_id.to_string(),
            })
        })
    }

    /// Records every draft of the batch in one transaction, each row in its
    /// own savepoint so a refused or conflicted row is skipped without
    /// undoing the rest; any other error stops the batch with nothing of it
    /// written. As `Sqlite::record_decisions`.
    pub fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        self.ensure_writable()?;
        self.decide(drafts, now, Batch::Many)
    }

    /// What [`Pg::record_decisions`] would make of `draft` now, writing
    /// nothing (no lock either: a preview).
    pub fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        let mut client = self.client.borrow_mut();
        let err = |e| super::error::pg_error(&self.shown, "reading the operation", e);
        let detail = load_detail(&mut *client, draft.op_id, self.tables)
            .map_err(err)?
            .ok_or_else(|| Error::NotFound {
                path: self.shown.clone(),
                what: draft.op_id.to_string(),
            })?;
        check_version(draft, &detail)?;
        judge(draft, &detail, now).map(|_| ())
    }

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
            let outcome = run(
                self.client.get_mut(),
                &self.shown,
                wait_ms,
                drafts,
                now,
                batch,
            );
            match outcome {
                Ok(outcomes) => return Ok(outcomes),
                Err(Failure::Settle(e)) => return Err(e),
                // A connection that died before COMMIT took the
                // transaction with it: nothing was written, so run it
                // again on a fresh one.
                Err(Failure::Pg(_, e))
                    if (retryable(&e) || self.client.get_mut().is_closed()) && tries < ATTEMPTS =>
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
        if e.code().map(|c| c.code()) == Some(LOCK_NOT_AVAILABLE) {
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
        super::error::pg_error(&self.shown, doing, e)
    }

    /// A fresh connection when the last one broke, so a console that lost
    /// its connection decides again without being restarted.
    pub(super) fn reconnect_if_closed(&mut self) -> Result<()> {
        if self.client.get_mut().is_closed() {
            self.reconnect()?;
        }
        Ok(())
    }

    /// Settles a COMMIT whose answer never came: reconnects, waits for the
    /// trail's write lock (held by the old transaction until it committed or
    /// rolled back, so what we read next is final), and looks for the newest
    /// decision written by its id and chain hash. Found: recorded (`Ok`).
    pub(super) fn after_lost_commit(&mut self, last: &Written) -> Result<()> {
        let lost = |checked| Error::ConnectionLost {
            path: self.shown.clone(),
            checked,
        };
        if self.reconnect().is_err() {
            return Err(lost(false));
        }
        let wait_ms = self.wait.as_millis().clamp(1, i32::MAX as u128);
        let found = (|| -> std::result::Result<bool, postgres::Error> {
            let mut tx = self.client.get_mut().transaction()?;
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

fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| RETRYABLE.contains(&c.code()))
}

/// One run of the decision transaction.
fn run(
    client: &mut Client,
    shown: &std::path::Path,
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
        match decide_in(&mut row, shown, draft, now) {
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

/// The three steps of a decision inside the transaction: reread under the
/// row lock at the version the operator saw, judge the rules on the fresh
/// row, write.
fn decide_in(
    tx: &mut impl GenericClient,
    shown: &std::path::Path,
    draft: &DecisionDraft,
    now: DateTime<Utc>,
) -> std::result::Result<(DecisionReceipt, Written), Failure> {
    let not_found = || {
        Failure::Settle(Error::NotFound {
            path: shown.to_path_buf(),
            what: draft.op_id.to_string(),
        })
    };
    // `::bigint` here and on the service's other columns: a service may have
    // made its ids and versions `integer`, which an i64 cannot bind to.
    // The row lock first, then the read: what is judged is what no other
    // writer can change before we commit.
    tx.query_opt(
        "SELECT 1 FROM operations WHERE id = $1::bigint FOR UPDATE",
        &[&draft.op_id.0],
    )
    .map_err(pg("locking the operation"))?
    .ok_or_else(not_found)?;
    let detail = load_detail(tx, draft.op_id, crate::store::tables::Tables::ALL)
        .map_err(pg("reading the operation"))?
        .ok_or_else(not_found)?;
    check_version(draft, &detail).map_err(Failure::Settle)?;
    let judged = judge(draft, &detail, now).map_err(Failure::Settle)?;
    // Stored and hashed at the second, the precision of settle's time text,
    // so the `timestamptz` reads back as the text the link covers.
    let decided = now.trunc_subsecs(0);
    let written = insert_decision(tx, draft, &detail, &judged, decided)?;
    let new_version = change_state(tx, draft, &detail, &judged, decided)?;
    let retry_request_id = write_retry_request(tx, draft, &detail, &written, decided)?;
    let op = &detail.operation;
    let receipt = DecisionReceipt {
        decision_id: DecisionId(written.id),
        op_id: op.id,
        kind: draft.kind,
        from_state: op.state.clone(),
        to_state: judged.to_state,
        new_version,
        retry_request_id,
        extra_attempt: judged.extra_attempt,
    };
    Ok((receipt, written))
}

/// The decision row, its id chosen here (the next after the newest, under
/// the trail's lock, so ids have no gaps a walk would call deletions) so
/// its chain hash, which covers the id, goes in with the row.
fn insert_decision(
    tx: &mut impl GenericClient,
    draft: &DecisionDraft,
    detail: &OperationDetail,
    judged: &Judged,
    decided: DateTime<Utc>,
) -> std::result::Result<Written, Failure> {
    let op = &detail.operation;
    let err = pg("writing the decision");
    let id: i64 = tx
        .query_one("SELECT coalesce(max(id), 0) + 1 FROM decisions", &[])
        .and_then(|r| r.try_get(0))
        .map_err(&err)?;
    let prev = head(tx).map_err(&err)?;
    let (result_id, evidence, note) = (
        non_empty(&draft.result_id),
        non_empty(&draft.evidence),
        non_empty(&draft.note),
    );
    let decided_at = format_time(decided);
    // The cells as SQLite would store them (see `chain::Cell`).
    let cells = [
        Cell::Int(id),
        Cell::Int(op.id.0),
        Cell::Text(draft.kind.as_str().as_bytes()),
        Cell::Text(op.state.as_str().as_bytes()),
        Cell::Text(judged.to_state.as_str().as_bytes()),
        Cell::from(result_id.as_deref()),
        Cell::from(evidence.as_deref()),
        Cell::from(note.as_deref()),
        Cell::Text(draft.operator.as_bytes()),
        Cell::Text(decided_at.as_bytes()),
        Cell::Int(op.version),
        draft.undoes.map_or(Cell::Null, |d| Cell::Int(d.0)),
        Cell::Int(i64::from(judged.extra_attempt)),
    ];
    let chain_hash = chain::link(&prev, &cells);
    tx.execute(
        "INSERT INTO decisions (id, op_id, decision, from_state, to_state, result_id,
             evidence, note, operator, decided_at, op_version, undoes, extra_attempt,
             chain_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        &[
            &id,
            &op.id.0,
            &draft.kind.as_str(),
            &op.state.as_str(),
            &judged.to_state.as_str(),
            &result_id,
            &evidence,
            &note,
            &draft.operator,
            &decided,
            &op.version,
            &draft.undoes.map(|d| d.0),
            &judged.extra_attempt,
            &chain_hash,
        ],
    )
    .map_err(&err)?;
    Ok(Written { id, chain_hash })
}

/// The chain hash of the newest decision, where the next one links on. A
/// newest row without a hash (written with plain SQL) restarts the chain
/// from the genesis, as on SQLite; `--verify` reports it.
pub(super) fn head(tx: &mut impl GenericClient) -> std::result::Result<String, postgres::Error> {
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

/// The operation's new state and result id, guarded by its version; its
/// new version.
fn change_state(
    tx: &mut impl GenericClient,
    draft: &DecisionDraft,
    detail: &OperationDetail,
    judged: &Judged,
    decided: DateTime<Utc>,
) -> std::result::Result<i64, Failure> {
    let op = &detail.operation;
    let changed = tx
        .query_opt(
            "UPDATE operations SET state = $1, result_id = $2, updated_at = $3,
                 version = version + 1
             WHERE id = $4::bigint AND version = $5::bigint
             RETURNING version::bigint",
            &[
                &judged.to_state.as_str(),
                &new_result_id(draft, detail),
                &decided,
                &op.id.0,
                &op.version,
            ],
        )
        .map_err(pg("changing the operation's state"))?;
    match changed {
        Some(row) => row
            .try_get(0)
            .map_err(pg("reading the operation's new version")),
        // Unreachable under the row lock; refuse rather than guess.
        None => Err(Failure::Settle(Error::VersionConflict {
            op: op.id,
            expected: draft.expected_version,
            found: op.version,
            state: op.state.to_string(),
            last_writer: None,
        })),
    }
}

/// Queues the retry a `retry_same_key` asks for, or cancels the queued one
/// for `cancel_retry`; the request's id.
fn write_retry_request(
    tx: &mut impl GenericClient,
    draft: &DecisionDraft,
    detail: &OperationDetail,
    written: &Written,
    decided: DateTime<Utc>,
) -> std::result::Result<Option<i64>, Failure> {
    let op = &detail.operation;
    match draft.kind {
        DecisionKind::RetrySameKey => {
            let row = tx
                .query_one(
                    "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by,
                         status, decision_id)
                     VALUES ($1, $2, $3, $4, 'queued', $5)
                     RETURNING id",
                    &[
                        &op.id.0,
                        &op.idem_key,
                        &decided,
                        &draft.operator,
                        &written.id,
                    ],
                )
                .map_err(pg("queueing the retry request"))?;
            row.try_get(0)
                .map(Some)
                .map_err(pg("queueing the retry request"))
        }
        DecisionKind::CancelRetry => {
            let request = detail.queued_retry().map(|r| r.id);
            let cancelled = tx
                .execute(
                    "UPDATE retry_requests SET status = 'cancelled'
                     WHERE id = $1 AND status = 'queued'",
                    &[&request],
                )
                .map_err(pg("cancelling the retry request"))?;
            if cancelled != 1 {
                return Err(Failure::Settle(Error::Refused {
                    op: op.id,
                    rule: Rule::RetryStillQueued,
                    reason: "a worker claimed the retry request".to_string(),
                }));
            }
            Ok(request)
        }
        _ => Ok(None),
    }
}
