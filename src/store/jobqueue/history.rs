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
use crate::store::detail;
use crate::store::postgres::verify_on;
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
    let statements = [sql.operation, sql.attempts, sql.events];
    detail::load_history(&mut client, statements, id, tables)
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
