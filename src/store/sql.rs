//! What a backend lends the shared reads: its SQL dialect (how a condition
//! is spelled) and a way to run one statement and read its rows' cells.
//! The statements' meaning (which rows a filter keeps, in which order a
//! page comes, what an operation's history holds) is written once above
//! the backends, in [`super::filter`] and [`super::detail`]; each backend
//! keeps only its connection, its spelling and its cell reading, as sqlx's
//! `Database` and diesel's `Backend` split the same concerns.

use chrono::{DateTime, Utc};

use super::cells::CellRead;
use crate::domain::SortColumn;

/// One argument of a statement, in no driver's type: each backend binds it
/// in its own (an instant is epoch seconds to SQLite, a `timestamptz` to
/// PostgreSQL). Values never enter the SQL text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
    Instant(DateTime<Utc>),
}

impl Arg {
    /// `now` in whole seconds: SQLite compares leases as epoch seconds, and
    /// a lease within the current second must be stale on both backends.
    pub(super) fn now(now: DateTime<Utc>) -> Arg {
        Arg::Instant(whole_seconds(now))
    }
}

/// `now` with its fraction dropped.
pub(super) fn whole_seconds(now: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
}

/// An operation's last attempt's start through the attempts primary key
/// (`op_id, attempt`), else its last change.
pub(crate) const LAST_ATTEMPT_STARTED: &str = "coalesce((SELECT a.started_at FROM attempts a
    WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1), o.updated_at)";

/// A statement's arguments in placeholder order, numbered as the dialect
/// numbers them (`?3` or `$3`).
pub(crate) struct Args {
    prefix: char,
    pub values: Vec<Arg>,
}

impl Args {
    pub(super) fn new(dialect: &dyn Dialect) -> Args {
        Args {
            prefix: dialect.param_prefix(),
            values: Vec::new(),
        }
    }

    /// Adds `arg` and names its placeholder.
    pub(super) fn push(&mut self, arg: Arg) -> String {
        self.values.push(arg);
        format!("{}{}", self.prefix, self.values.len())
    }

    pub(super) fn int(&mut self, n: i64) -> String {
        self.push(Arg::Int(n))
    }

    pub(super) fn text(&mut self, t: impl Into<String>) -> String {
        self.push(Arg::Text(t.into()))
    }
}

/// How a dialect spells what the shared statements mean. Each method says
/// the meaning; the backend's file says why its spelling has that meaning
/// (and serves its indexes).
pub(crate) trait Dialect {
    /// The placeholders' mark: `?` for `?1`, `$` for `$1`.
    fn param_prefix(&self) -> char;

    /// `column` with a hint that keeps the planner off its own index, where
    /// the dialect's planner needs one.
    fn unindexed(&self, column: &str) -> String;

    /// The states of an operation in the triage queue, or reserved, spelled
    /// as the partial queue index spells its condition.
    fn queue_candidates(&self, column: &str) -> String;

    /// A condition on `o` that holds for every operation in a state of
    /// [`Dialect::queue_candidates`] (and maybe others), which an index
    /// of the backend's own serves; None where the candidates' condition
    /// is served as it is.
    fn queue_members(&self) -> Option<String> {
        None
    }

    /// Where [`Dialect::queue_members`] names a table of the backend's
    /// own: a join to `o` that reads the members from it in `order`,
    /// beyond `bound` (an operator and a placeholder on the id) only, so
    /// the queue's pages walk that table and not the ledger. None where the
    /// members' condition serves as it is.
    fn queue_join(&self, _order: &str, _bound: Option<(&str, &str)>) -> Option<String> {
        None
    }

    /// The lease in `column` has passed at the placeholder `now` (no lease
    /// has passed: nobody owns it).
    fn lease_passed(&self, column: &str, now: &str) -> String;

    /// Text `column` compared byte by byte, whatever the database's locale.
    fn bytewise(&self, column: &str) -> String;

    /// `column` holds the `LIKE` pattern at placeholder `p` (backslash
    /// escapes), ignoring the case of ASCII letters only.
    fn contains(&self, column: &str, p: &str) -> String;

    /// A `*` pattern (every other character literal) as the operator and
    /// the pattern argument that match it, case-sensitively.
    fn glob(&self, pattern: &str) -> (&'static str, String);

    /// The FROM of the list's statements, with its aliases (`o`, and `s`
    /// where a summary table is joined).
    fn from(&self) -> &'static str;

    /// A count of the tables named `{p}1` in the ledger's schema: settle's
    /// tables made on first use (`settle_drills`) are read only once there.
    fn table_count(&self) -> &'static str;

    /// A list row's columns ([`super::rows::operation_row`]) over
    /// [`Dialect::from`] and whatever joins compute them.
    fn row_source(&self) -> &'static str;

    /// [`Dialect::row_source`] for a list nothing filters: a backend that
    /// drops rows whose lagging copy disagrees with the ledger (SQLite's
    /// read model) has nothing to check there, and must not hide a row a
    /// service edited until its copy catches up.
    fn unfiltered_row_source(&self) -> &'static str {
        self.row_source()
    }

    /// The operation's attempt count, in a condition on `o`.
    fn attempts(&self) -> &'static str;

    /// The operations as one relation, for a lookup by id or natural key
    /// (a job queue's view in place of the table).
    fn operations(&self) -> &'static str {
        "operations"
    }

    /// Each attempt's error, as a FROM item `a` with `op_id` and `error`
    /// (a job queue keeps its errors elsewhere than `attempts`).
    fn attempt_errors(&self) -> &'static str {
        "attempts a"
    }

    /// The operation's last error, in a statement over [`Dialect::from`].
    fn last_error(&self) -> &'static str;

    /// The time text in `column` as whole seconds since the epoch, NULL
    /// when it is not a time.
    fn epoch_seconds(&self, column: &str) -> String;

    /// When an operation got stuck, for the Clusters view's chart: its
    /// last attempt's start, or its last change when it has no attempt.
    /// An engine whose record says otherwise overrides it.
    fn stuck_since(&self) -> &'static str {
        LAST_ATTEMPT_STARTED
    }

    /// The expression a sort orders the list by, never NULL (a row
    /// compared with NULL is neither before nor after it, and the page
    /// would lose the row).
    fn sort(&self, column: SortColumn) -> &'static str;

    /// A seek key's text at placeholder `p`, as a value of `column`'s sort
    /// expression.
    fn sort_text(&self, column: SortColumn, p: String) -> String;

    /// `column` read as text, where the database may hold a number.
    fn as_text(&self, column: &str) -> String;

    /// The condition on `events` that selects one operation's events, its
    /// id at placeholder `key`.
    fn events_of(&self, key: &str) -> String {
        format!("op_id = {key}")
    }

    /// A constant standing for a column of SQL type `ty` the ledger lacks.
    fn typed(&self, literal: &str, ty: &str) -> String;

    /// A condition on `o.id` that every operation whose `term` holds
    /// `text` meets, from an index the backend keeps, for the planner to
    /// read the few candidates instead of every row; None where no index
    /// serves the term (or it would not pay: a common word is found sooner
    /// by walking the rows). The term's own condition still decides.
    fn text_candidates(&self, _term: TextTerm, _text: &str, _args: &mut Args) -> Option<String> {
        None
    }
}

/// What a text term of a filter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextTerm {
    /// `err:`: any attempt's error.
    Error,
    /// Free text: account, op type, key or result id.
    Free,
}

/// The dialect a backend reads one query in: its own, or one that also
/// knows which of the query's text terms its index answers
/// ([`Dialect::text_candidates`]).
pub(crate) enum QueryDialect<'a> {
    Shared(&'a dyn Dialect),
    Own(Box<dyn Dialect + 'a>),
}

impl<'a> std::ops::Deref for QueryDialect<'a> {
    type Target = dyn Dialect + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            QueryDialect::Shared(d) => *d,
            QueryDialect::Own(d) => d.as_ref(),
        }
    }
}

/// What reads one row's cells into a `T`, failing with the driver's `E`.
pub(super) type ReadRow<'a, T, E> = &'a mut dyn FnMut(&mut dyn CellRead<Error = E>) -> Result<T, E>;

/// A connection or transaction the shared reads run their statements on.
/// `read` is handed each row's cells, in the statement's column order.
pub(super) trait Reader {
    type Error;

    fn dialect(&self) -> &dyn Dialect;

    /// Every row of `sql`.
    fn rows<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> Result<Vec<T>, Self::Error>;

    /// The one row of `sql` (a key's), if there is one.
    fn row<T>(
        &mut self,
        sql: &str,
        args: &[Arg],
        read: ReadRow<'_, T, Self::Error>,
    ) -> Result<Option<T>, Self::Error>;
}
