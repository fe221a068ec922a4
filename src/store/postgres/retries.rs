//! The worker's side of `retry_requests` on a PostgreSQL ledger: the same
//! claims, refusals and ends as on every backend ([`crate::store::retries`]),
//! word for word, so a worker reads the same on either. A claim takes its
//! request with `FOR UPDATE SKIP LOCKED`, so two workers never take the
//! same one and never wait on each other; finishing locks the request
//! first, so a worker re-claiming it waits for this end. This file only
//! spells each step in PostgreSQL's SQL.

use std::time::Duration;

use chrono::{DateTime, Utc};
use postgres::GenericClient;

use super::conn::Pg;
use super::filter::PgSql;
use super::history::load_detail;
use crate::domain::retry_plan::{AttemptWrite, EventWrite, FinishPlan};
use crate::domain::retry_run::{Claimed, Finish, RetryClaim, RetryRun};
use crate::domain::{Operation, OperationDetail, OperationId, State};
use crate::error::Result;
use crate::store::backend::Retries;
use crate::store::filter::is_queue_candidate;
use crate::store::retries::{self, Candidate, Holder, RequestEnd, RetryTx};
use crate::store::tables::Tables;

type PgResult<T> = std::result::Result<T, postgres::Error>;

impl Retries for Pg {
    /// [`crate::store::backend::Retries::claim_retry`] in one transaction.
    fn claim_retry(
        &mut self,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>> {
        let (tables, declared) = (self.tables, self.declared.clone());
        let client = self.writer()?;
        let claimed = (|| {
            let mut tx = client.transaction()?;
            // A read's statement timeout must not cut a write short; row
            // waits stay bounded by the session's lock_timeout (Busy).
            tx.batch_execute("SET LOCAL statement_timeout = 0")?;
            let claimed = retries::claim(
                &mut Tx {
                    tx: &mut tx,
                    tables,
                },
                &declared,
                worker,
                lease,
                now,
            )?;
            tx.commit()?;
            Ok(claimed)
        })();
        claimed.map_err(|e| self.write_err("claiming a retry", e))
    }

    /// [`crate::store::backend::Retries::finish_retry`] in one transaction.
    fn finish_retry(
        &mut self,
        claim: &RetryClaim,
        run: &RetryRun,
        now: DateTime<Utc>,
    ) -> Result<Finish> {
        let tables = self.tables;
        let client = self.writer()?;
        let finish = (|| {
            let mut tx = client.transaction()?;
            tx.batch_execute("SET LOCAL statement_timeout = 0")?;
            let finish = retries::finish(
                &mut Tx {
                    tx: &mut tx,
                    tables,
                },
                claim,
                run,
                now,
            )?;
            tx.commit()?;
            Ok(finish)
        })();
        finish.map_err(|e| self.write_err("recording the retry's end", e))
    }
}

/// A claim's or an end's transaction on PostgreSQL.
struct Tx<'a, C: GenericClient> {
    tx: &'a mut C,
    tables: Tables,
}

impl<C: GenericClient> RetryTx for Tx<'_, C> {
    type Fail = postgres::Error;

    fn candidate(&mut self, at: &str) -> PgResult<Option<Candidate>> {
        // SKIP LOCKED: a request another worker is claiming or finishing
        // right now is passed over, not waited for. Decisions are
        // append-only, so the extra attempt needs no lock.
        let row = self.tx.query_opt(
            "SELECT r.id::bigint, r.op_id::bigint, r.runs::bigint,
                    coalesce((SELECT d.extra_attempt FROM decisions d
                              WHERE d.id = r.decision_id), false)
             FROM retry_requests r
             WHERE r.status = 'queued'
                OR (r.status = 'claimed' AND r.claim_expires_at < $1::text::timestamptz)
             ORDER BY r.id LIMIT 1
             FOR UPDATE SKIP LOCKED",
            &[&at],
        )?;
        row.map(|r| {
            Ok(Candidate {
                request_id: r.try_get(0)?,
                op_id: r.try_get(1)?,
                runs: r.try_get(2)?,
                extra_attempt: r.try_get(3)?,
            })
        })
        .transpose()
    }

    fn fresh_detail(&mut self, op: OperationId) -> PgResult<Option<OperationDetail>> {
        // The operation's row lock before its read, as a decision takes it:
        // what is judged is what no decision can change before we commit.
        let locked = self.tx.query_opt(
            "SELECT 1 FROM operations WHERE id = $1::bigint FOR UPDATE",
            &[&op.0],
        )?;
        match locked {
            Some(_) => load_detail(self.tx, op, self.tables, &PgSql::ALL),
            None => Ok(None),
        }
    }

    fn take_claim(&mut self, request_id: i64, worker: &str, expires: &str) -> PgResult<()> {
        self.tx.execute(
            "UPDATE retry_requests SET status = 'claimed', claimed_by = $1,
                 claim_expires_at = $2::text::timestamptz, runs = runs + 1
             WHERE id = $3::bigint",
            &[&worker, &expires, &request_id],
        )?;
        Ok(())
    }

    fn end_request(&mut self, end: &RequestEnd<'_>) -> PgResult<()> {
        self.tx.execute(
            "UPDATE retry_requests SET status = $1, finished_at = $2::text::timestamptz,
                 outcome = $3, claimed_by = coalesce($4, claimed_by)
             WHERE id = $5::bigint",
            &[
                &end.status,
                &end.at,
                &end.outcome,
                &end.worker,
                &end.request_id,
            ],
        )?;
        Ok(())
    }

    fn insert_event(&mut self, op: OperationId, e: &EventWrite) -> PgResult<()> {
        self.tx.execute(
            "INSERT INTO events (op_id, attempt, at, event, detail)
             VALUES ($1::bigint, $2::bigint, $3::text::timestamptz, $4, $5)",
            &[&op.0, &e.attempt, &e.at, &e.event, &e.detail],
        )?;
        Ok(())
    }

    fn move_state(&mut self, op: &Operation, state: &State, at: &str) -> PgResult<bool> {
        let changed = self.tx.execute(
            "UPDATE operations SET state = $1, updated_at = $2::text::timestamptz,
                 version = version + 1
             WHERE id = $3::bigint AND version = $4::bigint",
            &[&state.as_str(), &at, &op.id.0, &op.version],
        )?;
        if changed == 1 && is_queue_candidate(state) {
            super::schema::queue::add(self.tx, op.id.0)?;
        }
        Ok(changed == 1)
    }

    fn holder(&mut self, request_id: i64) -> PgResult<Option<Holder>> {
        // The request's lock first: a worker re-claiming it after the lease
        // passed waits (or skips it) until this end is written or not.
        self.tx
            .query_opt(
                "SELECT status, claimed_by, runs::bigint FROM retry_requests
                 WHERE id = $1::bigint FOR UPDATE",
                &[&request_id],
            )?
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .transpose()
    }

    fn state_and_attempts(&mut self, op: OperationId) -> PgResult<(String, i64)> {
        let row = self.tx.query_one(
            "SELECT state,
                    (SELECT coalesce(max(attempt), 0)::bigint FROM attempts
                     WHERE op_id = $1::bigint)
             FROM operations WHERE id = $1::bigint FOR UPDATE",
            &[&op.0],
        )?;
        Ok((row.try_get(0)?, row.try_get(1)?))
    }

    fn insert_attempt(&mut self, op: OperationId, a: &AttemptWrite) -> PgResult<()> {
        self.tx.execute(
            "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
             VALUES ($1::bigint, $2::bigint, $3::text::timestamptz, $4::text::timestamptz,
                     $5, $6, $7)",
            &[
                &op.0,
                &a.attempt,
                &a.started_at,
                &a.ended_at,
                &a.outcome,
                &a.error,
                &a.response,
            ],
        )?;
        Ok(())
    }

    fn finish_operation(&mut self, op: OperationId, plan: &FinishPlan, at: &str) -> PgResult<()> {
        self.tx.execute(
            "UPDATE operations SET state = coalesce($1, state),
                 result_id = coalesce($2, result_id),
                 updated_at = $3::text::timestamptz, version = version + 1
             WHERE id = $4::bigint",
            &[
                &plan.to_state.as_ref().map(State::as_str),
                &plan.result_id,
                &at,
                &op.0,
            ],
        )?;
        if plan.to_state.as_ref().is_some_and(is_queue_candidate) {
            super::schema::queue::add(self.tx, op.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::testing::{connect, fresh_database};
    use crate::domain::State;
    use crate::domain::retry_run::Finish;
    use crate::store::Ledger;
    use crate::store::parity::{PENDING, Sample, claim, completed, run_of, sample, t};
    use std::path::PathBuf;

    /// The demo's sample copied into a fresh PostgreSQL ledger; `None`
    /// without a server.
    fn pg_sample(hint: &str) -> Option<(Sample, Ledger, PathBuf)> {
        let address = fresh_database(hint)?;
        let mut pg = Ledger::create(&address).unwrap();
        let demo = sample();
        demo.ledger.copy_into(&mut pg, &mut |_, _| {}).unwrap();
        Some((demo, pg, address))
    }

    /// A request another worker holds locked is passed over, not waited
    /// for: the claim takes the next one (a wait would end in Busy).
    #[test]
    fn a_locked_request_is_skipped_not_waited_for() {
        let Some((_demo, mut pg, address)) = pg_sample("retry skip") else {
            return;
        };
        let mut service = connect(&address);
        service
            .batch_execute(
                "INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by, status,
                     decision_id)
                 SELECT op_id, idem_key, requested_at, 'bob', 'queued', decision_id
                 FROM retry_requests WHERE status = 'queued'",
            )
            .unwrap();
        let ids: Vec<i64> = service
            .query(
                "SELECT id FROM retry_requests WHERE status = 'queued' ORDER BY id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(ids.len(), 2);
        let mut holder = connect(&address);
        let mut tx = holder.transaction().unwrap();
        tx.execute(
            "SELECT 1 FROM retry_requests WHERE id = $1 FOR UPDATE",
            &[&ids[0]],
        )
        .unwrap();
        let c = run_of(claim(&mut pg, "w", 1));
        assert_eq!(
            c.request_id, ids[1],
            "the locked, older request was skipped"
        );
        tx.rollback().unwrap();
    }

    /// The worker's role as docs/ledger-v1.md grants it (under a name of
    /// this database's own: roles are the cluster's, shared by every test)
    /// is enough to claim and finish, and no more: it cannot decide.
    #[test]
    fn the_documented_worker_role_claims_and_finishes_but_never_decides() {
        let Some((_demo, owner, address)) = pg_sample("retry role") else {
            return;
        };
        drop(owner);
        let address = address.to_str().unwrap().to_string();
        let db = address.rsplit("dbname=").next().unwrap().to_string();
        let role = format!("{db}_worker");
        let grants: String = super::super::tests::backend::documented_role_sql()
            .split_inclusive(';')
            .filter(|s| s.contains("settle_worker"))
            .collect::<String>()
            .replace("settle_worker", &role);
        assert!(grants.contains("GRANT"), "{grants}");
        connect(&PathBuf::from(&address))
            .batch_execute(&grants)
            .unwrap();
        let as_worker = PathBuf::from(address.replace("user=postgres", &format!("user={role}")));
        let (mut ledger, _) = Ledger::open(&as_worker, crate::store::Access::ReadWrite).unwrap();
        let c = run_of(claim(&mut ledger, "w", 1));
        let done = ledger.finish_retry(&c, &completed(2), t(2)).unwrap();
        assert!(
            matches!(&done, Finish::Recorded(r) if r.status == "done"),
            "{done:?}"
        );
        assert_eq!(
            ledger.detail(PENDING).unwrap().operation.state,
            State::Completed
        );
        let e = connect(&as_worker)
            .batch_execute("UPDATE decisions SET note = 'x'")
            .unwrap_err();
        assert_eq!(
            e.code(),
            Some(&::postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{e:?}"
        );
    }
}
