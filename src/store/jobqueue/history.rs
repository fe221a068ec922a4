//! One job's history and settle's audit trail on a job queue: the job, its
//! attempts and its events from the engine's own record ([`load_job`], on
//! a connection or inside a decision's transaction), and what settle keeps
//! about it (decisions, retry requests, the task's contract) from settle's
//! own schema, read by the shared statements of [`crate::store::detail`].
//! Reads only.

use postgres::GenericClient;

use super::engine::EngineSql;
use super::session::JobQueue;
use crate::domain::{Decision, DecisionId, OperationDetail, OperationId, Seek};
use crate::error::{Error, Result};
use crate::store::backend::History;
use crate::store::chain::ChainVerdict;
use crate::store::detail::{self, settle_history};
use crate::store::postgres::verify_on;
use crate::store::rows::{self, flagged};
use crate::store::sql::{Arg, Reader};
use crate::store::tables::Tables;

/// Reads one job with its attempts and events as the engine recorded them,
/// and settle's own history of it where `tables` says settle's schema is
/// there; `None` when there is no such job.
pub(super) fn load_job<C: GenericClient>(
    mut client: &mut C,
    sql: &EngineSql,
    id: OperationId,
    tables: Tables,
) -> std::result::Result<Option<OperationDetail>, postgres::Error> {
    let r = &mut client;
    let key = [Arg::Int(id.0)];
    let Some(operation) = r.row(sql.operation, &key, &mut |c| rows::operation(c))? else {
        return Ok(None);
    };
    let mut malformed = Vec::new();
    let attempts = r.rows(sql.attempts, &key, &mut |c| rows::attempt(c))?;
    let attempts = flagged(attempts, &mut malformed, |a| {
        format!("attempt {}", a.attempt)
    });
    let events = r.rows(sql.events, &key, &mut |c| rows::event(c))?;
    let events = flagged(events, &mut malformed, |e| format!("event {}", e.id));
    let mut detail = OperationDetail {
        operation,
        attempts,
        events,
        decisions: Vec::new(),
        retry_requests: Vec::new(),
        probes: Vec::new(),
        contract: None,
        history_malformed: malformed,
    };
    settle_history(r, &mut detail, tables)?;
    Ok(Some(detail))
}

impl History for JobQueue {
    fn detail(&self, id: OperationId) -> Result<OperationDetail> {
        let (sql, tables) = (self.sql, self.tables());
        self.with_client(&format!("reading job {id}"), |client| {
            load_job(client, sql, id, tables)
        })?
        .ok_or_else(|| Error::NotFound {
            path: self.shown().to_path_buf(),
            what: id.to_string(),
        })
    }

    fn audit_count(&self, seek: Seek<DecisionId>) -> Result<usize> {
        let tables = self.tables();
        self.with_client("counting the audit trail", |mut client| {
            detail::audit_count(&mut client, tables, seek)
        })
    }

    fn audit_page(&self, seek: Seek<DecisionId>, limit: usize) -> Result<Vec<Decision>> {
        let tables = self.tables();
        self.with_client("reading the audit trail", |mut client| {
            detail::audit_page(&mut client, tables, seek, limit)
        })
    }

    /// The chain of settle's own decisions (none before the first).
    fn verify_chain(&self) -> Result<ChainVerdict> {
        if !self.tables().console {
            return Ok(ChainVerdict::Intact {
                decisions: 0,
                head: None,
            });
        }
        verify_on(&mut *self.client()?, self.shown())
    }
}
