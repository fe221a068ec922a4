//! PostgreSQL's spelling of the shared statements
//! ([`crate::store::filter`]), matching what SQLite's matches row for row:
//! `$n` placeholders, text compared byte by byte as SQLite compares it
//! (`COLLATE "C"`) whatever the database's locale, `LIKE` case-insensitive
//! for ASCII only as SQLite's is, and the list's derived columns computed
//! for each row alone. Builds text only; runs nothing.

use postgres::types::ToSql;

use super::schema::Events;
use super::schema::queue::queue_candidates_sql;
use crate::domain::SortColumn;
use crate::store::filter::like_literal;
use crate::store::sql::{Arg, Dialect};

/// The arguments as the client binds them: each in its value's own type
/// (an instant as a `timestamptz`).
pub(crate) fn refs(values: &[Arg]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| match v {
            Arg::Int(n) => n as &(dyn ToSql + Sync),
            Arg::Text(t) => t,
            Arg::Instant(t) => t,
        })
        .collect()
}

/// A reserved operation whose lease has passed (or that has none: nobody
/// owns it), as [`crate::domain::stale_reservation`] judges it. `now` is a
/// placeholder for a `timestamptz` parameter.
pub(super) fn stale_sql(alias: &str, now: &str) -> String {
    format!(
        "({alias}state = 'reserved' AND ({alias}lease_expires_at IS NULL OR {alias}lease_expires_at <= {now}))"
    )
}

/// A list row: the operation's columns, and its attempt count, last event
/// and last error, each computed for this row alone (LATERAL through
/// `events (op_id, id)` and the attempts primary key), where SQLite keeps
/// them in a derived table. `$retry` is the last retry request's status,
/// `$event` the join that gives `ev.event`.
macro_rules! row_source {
    ($retry:expr, $event:expr) => {
        concat!(
            "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    n.attempts, o.max_attempts, ev.event, le.error,
    o.result_id, o.lease_expires_at, o.created_at, o.updated_at, o.version, ",
            $retry,
            "
    FROM operations o
    CROSS JOIN LATERAL (SELECT count(*) AS attempts FROM attempts a WHERE a.op_id = o.id) n
    LEFT JOIN LATERAL (SELECT a.error FROM attempts a WHERE a.op_id = o.id
        ORDER BY a.attempt DESC LIMIT 1) le ON true
    ",
            $event
        )
    };
}

macro_rules! retry_status {
    () => {
        "CASE WHEN o.state = 'retry_pending' THEN (SELECT r.status FROM retry_requests r
        WHERE r.op_id = o.id ORDER BY r.id DESC LIMIT 1) END"
    };
}

/// The last event through an index on `events (op_id, …)`.
macro_rules! indexed_event {
    () => {
        "LEFT JOIN LATERAL (SELECT e.event FROM events e WHERE e.op_id = o.id
        ORDER BY e.id DESC LIMIT 1) ev ON true"
    };
}

/// The last event through settle's own table ([`super::schema::event_ops`]): the
/// newest event above the event mark when the operation has one, else the
/// newest id the table holds for it. The events above the mark are read
/// once per statement, not once per row: a ledger no writable session
/// caught up for a while has many. The mark is spelled as
/// [`super::schema::event_ops::MARK`] is, for [`super::conn::Pg::pinned`]. The
/// `LIMIT 1` (the primary key finds one row at most) keeps the lookup a
/// lookup: without it the planner may flatten it into a join that hashes
/// the whole of `events` (34M rows at 10M) for a whole list.
macro_rules! mapped_event {
    () => {
        "LEFT JOIN (SELECT t.op_id, max(t.id) AS id FROM events t
        WHERE t.id > (SELECT event_mark FROM settle_queue_mark) GROUP BY t.op_id) tail
        ON tail.op_id = o.id
    LEFT JOIN LATERAL (SELECT e.event FROM events e
        WHERE e.op_id = o.id AND e.id = coalesce(tail.id,
            (SELECT m.id FROM settle_event_ops m WHERE m.op_id = o.id
              ORDER BY m.id DESC LIMIT 1)) LIMIT 1) ev ON true"
    };
}

/// No last event, on a service's database without an index on
/// `events.op_id` (before adoption): each row's lookup would scan the whole
/// table, and finding every operation's last event in one pass costs a
/// sort of all events on every page. The look says so
/// ([`super::schema::tables`]).
macro_rules! no_event {
    () => {
        "CROSS JOIN (SELECT NULL::text AS event) ev"
    };
}

/// The row source for each pair of (console tables there, how events are
/// found by operation: [`Events`] in order).
const ROW_SOURCES: [[&str; 3]; 2] = [
    [
        row_source!("NULL::text", no_event!()),
        row_source!("NULL::text", indexed_event!()),
        row_source!("NULL::text", mapped_event!()),
    ],
    [
        row_source!(retry_status!(), no_event!()),
        row_source!(retry_status!(), indexed_event!()),
        row_source!(retry_status!(), mapped_event!()),
    ],
];

/// PostgreSQL's spelling. `console`: the console's tables are there (a
/// read-only look at a service's unadopted database has none); `events`:
/// how an operation's events are found; `queue`: settle's queue table is
/// there ([`super::schema::queue`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PgSql {
    pub console: bool,
    pub events: Events,
    pub queue: bool,
}

impl PgSql {
    /// Everything there: a ledger settle created or adopted.
    pub(crate) const ALL: PgSql = PgSql {
        console: true,
        events: Events::Map,
        queue: true,
    };

    /// Every combination, indexed by [`PgSql::index`].
    pub(crate) const EVERY: [PgSql; 12] = {
        let mut every = [PgSql::ALL; 12];
        let mut i = 0;
        while i < 12 {
            every[i] = PgSql {
                console: i / 6 != 0,
                events: match (i / 2) % 3 {
                    0 => Events::None,
                    1 => Events::Index,
                    _ => Events::Map,
                },
                queue: i % 2 != 0,
            };
            i += 1;
        }
        every
    };

    /// This spelling's place in [`PgSql::EVERY`].
    pub(crate) const fn index(self) -> usize {
        (self.console as usize) * 6 + (self.events as usize) * 2 + self.queue as usize
    }
}

impl Dialect for PgSql {
    fn param_prefix(&self) -> char {
        '$'
    }

    /// The planner needs no hint to walk the id order.
    fn unindexed(&self, column: &str) -> String {
        column.to_string()
    }

    fn queue_candidates(&self, column: &str) -> String {
        queue_candidates_sql(column)
    }

    /// The queue's table and the ids above its mark; a database without
    /// the table (a look before adoption) reads every row's state.
    fn queue_members(&self) -> Option<String> {
        self.queue.then(super::schema::queue::members_sql)
    }

    fn queue_join(&self, order: &str, bound: Option<(&str, &str)>) -> Option<String> {
        self.queue
            .then(|| super::schema::queue::members_join(order, bound))
    }

    fn lease_passed(&self, column: &str, now: &str) -> String {
        format!("{column} IS NULL OR {column} <= {now}")
    }

    /// The one index per text column is `COLLATE "C"` too.
    fn bytewise(&self, column: &str) -> String {
        format!("{column} COLLATE \"C\"")
    }

    /// Under the "C" collation PostgreSQL's `ILIKE` folds exactly the ASCII
    /// letters, as SQLite's `LIKE` does, whatever the database's locale.
    fn contains(&self, column: &str, p: &str) -> String {
        format!("{column} COLLATE \"C\" ILIKE {p}")
    }

    /// A case-sensitive `LIKE`, `*` becoming `%` and the rest escaped.
    fn glob(&self, pattern: &str) -> (&'static str, String) {
        let mut out = String::new();
        for (i, part) in pattern.split('*').enumerate() {
            if i > 0 {
                out.push('%');
            }
            like_literal(part, &mut out);
        }
        ("LIKE", out)
    }

    fn from(&self) -> &'static str {
        "operations o"
    }

    fn row_source(&self) -> &'static str {
        ROW_SOURCES[usize::from(self.console)][self.events as usize]
    }

    fn attempts(&self) -> &'static str {
        "(SELECT count(*) FROM attempts a WHERE a.op_id = o.id)"
    }

    fn last_error(&self) -> &'static str {
        "(SELECT a.error FROM attempts a WHERE a.op_id = o.id
          ORDER BY a.attempt DESC LIMIT 1)"
    }

    /// As SQLite reads it: whole seconds.
    fn epoch_seconds(&self, column: &str) -> String {
        format!("floor(extract(epoch FROM {column}))::bigint")
    }

    /// Text sorts byte by byte as on SQLite, not by the database's locale.
    fn sort(&self, column: SortColumn) -> &'static str {
        match column {
            SortColumn::Id => "o.id",
            SortColumn::Created => "o.created_at",
            SortColumn::Updated => "o.updated_at",
            SortColumn::Account => "o.account COLLATE \"C\"",
            SortColumn::OpType => "o.op_type COLLATE \"C\"",
            SortColumn::Attempts => "n.attempts",
            SortColumn::LastEvent => "coalesce(ev.event, '') COLLATE \"C\"",
        }
    }

    /// A time key is the text a row showed ([`super::cells::time_text`]),
    /// read back by the server.
    fn sort_text(&self, column: SortColumn, p: String) -> String {
        match column {
            SortColumn::Created | SortColumn::Updated => format!("{p}::text::timestamptz"),
            _ => format!("{p}::text"),
        }
    }

    /// The cells read any type as text.
    fn as_text(&self, column: &str) -> String {
        column.to_string()
    }

    /// Typed, so the row's columns have the types of the real ones.
    fn typed(&self, literal: &str, ty: &str) -> String {
        format!("{literal}::{ty}")
    }

    /// Through settle's own table where it is whole, else by `op_id`.
    fn events_of(&self, key: &str) -> String {
        match self.events {
            Events::Map => super::schema::event_ops::events_of(key),
            Events::Index | Events::None => format!("op_id = {key}"),
        }
    }

    fn table_count(&self) -> &'static str {
        "SELECT count(*) FROM pg_catalog.pg_tables
          WHERE schemaname = current_schema() AND tablename = $1"
    }
}
