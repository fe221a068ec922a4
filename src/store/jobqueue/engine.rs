//! What tells one job queue's tables from another's: each engine's SQL
//! ([`EngineSql`], written in its own file) and the dialect the shared
//! statements of [`crate::store::filter`] are spelled in over it. The
//! spelling is PostgreSQL's ([`PgSql`]); only the FROM, the derived
//! columns and the queue's condition differ. Builds text only.

use crate::domain::SortColumn;
use crate::store::postgres::PgSql;
use crate::store::sql::Dialect;

/// A list row's columns over a view `o` that carries settle's columns,
/// `attempts` and `max_attempts` among them.
macro_rules! row_source {
    ($view:expr) => {
        concat!(
            "SELECT o.id, o.state, o.account, o.op_type, o.idem_key, o.attempts, o.max_attempts,
                o.last_event, o.last_error, o.result_id, o.lease_expires_at, o.created_at,
                o.updated_at, o.version, NULL::text FROM ",
            $view
        )
    };
}
pub(super) use row_source;

/// One job's operation columns over such a view, the job being `$1`.
macro_rules! operation {
    ($view:expr) => {
        concat!(
            "SELECT o.id, o.account, o.op_type, o.idem_key, o.fingerprint, o.params, o.state,
                o.result_id, o.max_attempts, NULL::timestamptz, o.lease_expires_at,
                NULL::timestamptz, o.created_at, o.updated_at, o.version FROM ",
            $view,
            " WHERE o.id = $1"
        )
    };
}
pub(super) use operation;

/// One engine's tables read as operations: each statement names the view
/// `o` (one job per row, with settle's columns) or a job by `$1`.
#[derive(Debug)]
pub(crate) struct EngineSql {
    /// The engine's name, as the header and errors say it.
    pub name: &'static str,
    /// Its jobs table, whose presence recognises it.
    pub jobs: &'static str,
    /// The view, aliased `o`.
    pub from: &'static str,
    /// A list row's columns over the view.
    pub row_source: &'static str,
    /// One job's operation columns ([`crate::store::rows::operation`]).
    pub operation: &'static str,
    /// One job's attempts ([`crate::store::rows::attempt`]).
    pub attempts: &'static str,
    /// One job's events ([`crate::store::rows::event`]).
    pub events: &'static str,
    /// Each attempt's error as `a (op_id, error)`, for `error:` filters.
    pub attempt_errors: &'static str,
    /// The queue's candidates (exhausted, reserved) in the engine's own
    /// state column, which its indexes know.
    pub queue_candidates: &'static str,
    /// The engine's word for a job a worker is running.
    pub running: &'static str,
    /// A number that moves whenever a job changes.
    pub data_version: &'static str,
    /// How a decision changes a job, where settle decides on this engine.
    pub writes: Option<&'static EngineWrites>,
}

/// A decision's change to a job in the engine's own terms: its functions
/// or its documented updates, run in order inside the decision's
/// transaction, each statement taking the job's id as `$1` and, where it
/// has a second placeholder, settle's result id as `$2`.
#[derive(Debug)]
pub(crate) struct EngineWrites {
    /// Locks the job: against other deciders, and against the engine's
    /// workers, which skip a locked job.
    pub lock: &'static str,
    /// Finishes the job as succeeded (`applied`).
    pub completed: &'static [&'static str],
    /// Takes the job out of the queue as "will not run" (`not_applied`).
    pub not_applied: &'static [&'static str],
    /// Takes the job away instead (`not_applied` with
    /// `--remove-not-applied`), where the engine has a way to; it leaves
    /// the job as `completed_word` says (gone).
    pub removed: Option<&'static [&'static str]>,
    /// Puts the job back in the engine's queue to run now, under its key
    /// (`retry_same_key`): the engine's worker runs it again.
    pub retry: &'static [&'static str],
    /// The job's state word and version after the statements.
    pub after: &'static str,
    /// The engine's words the two must leave the job in.
    pub completed_word: &'static str,
    pub not_applied_word: &'static str,
    pub retry_word: &'static str,
}

impl Dialect for EngineSql {
    fn param_prefix(&self) -> char {
        PgSql::ALL.param_prefix()
    }

    fn unindexed(&self, column: &str) -> String {
        PgSql::ALL.unindexed(column)
    }

    /// Said over the engine's own state, never the derived one, so the
    /// planner can use the engine's index on it.
    fn queue_candidates(&self, _column: &str) -> String {
        self.queue_candidates.to_string()
    }

    fn lease_passed(&self, column: &str, now: &str) -> String {
        PgSql::ALL.lease_passed(column, now)
    }

    fn bytewise(&self, column: &str) -> String {
        PgSql::ALL.bytewise(column)
    }

    fn contains(&self, column: &str, p: &str) -> String {
        PgSql::ALL.contains(column, p)
    }

    fn glob(&self, pattern: &str) -> (&'static str, String) {
        PgSql::ALL.glob(pattern)
    }

    fn from(&self) -> &'static str {
        self.from
    }

    fn row_source(&self) -> &'static str {
        self.row_source
    }

    fn attempts(&self) -> &'static str {
        "o.attempts"
    }

    fn operations(&self) -> &'static str {
        self.from
    }

    fn attempt_errors(&self) -> &'static str {
        self.attempt_errors
    }

    fn last_error(&self) -> &'static str {
        "o.last_error"
    }

    fn epoch_seconds(&self, column: &str) -> String {
        PgSql::ALL.epoch_seconds(column)
    }

    /// The view's columns, where PostgreSQL's ledger names its joins.
    fn sort(&self, column: SortColumn) -> &'static str {
        match column {
            SortColumn::Attempts => "o.attempts",
            SortColumn::LastEvent => "coalesce(o.last_event, '') COLLATE \"C\"",
            other => PgSql::ALL.sort(other),
        }
    }

    fn sort_text(&self, column: SortColumn, p: String) -> String {
        PgSql::ALL.sort_text(column, p)
    }

    fn as_text(&self, column: &str) -> String {
        PgSql::ALL.as_text(column)
    }

    fn typed(&self, literal: &str, ty: &str) -> String {
        PgSql::ALL.typed(literal, ty)
    }

    fn table_count(&self) -> &'static str {
        PgSql::ALL.table_count()
    }

    /// The engines keep no attempts table settle reads in a condition:
    /// a job got stuck when it last changed.
    fn stuck_since(&self) -> &'static str {
        "o.updated_at"
    }
}
