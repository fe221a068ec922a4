//! SQLite's spelling of the shared statements ([`crate::store::filter`]):
//! `?n` placeholders, GLOB, `LIKE … ESCAPE`, the unary `+` that keeps the
//! planner off an index, and the queue and stale-lease predicates spelled
//! from the domain's definitions, which the partial indexes repeat. Builds
//! text only; runs nothing.

use std::sync::LazyLock;

use rusqlite::ToSql;
use rusqlite::types::{ToSqlOutput, Value};

use crate::domain::SortColumn;
use crate::store::filter::queue_candidate_constants;
use crate::store::sql::{Arg, Args, Dialect, TextTerm};

/// The states an operation in the triage queue can have, as the partial
/// index `settle_operations_queue` (on the read model) and the queue
/// predicate both spell it
/// (SQLite uses a partial index only when the query repeats its condition).
/// The unary `+` keeps the planner off `settle_operations_state`, which
/// would read the states one after the other and sort the whole queue.
/// Spelled as `OR`s, not `IN (…)`: building the index evaluated an `IN`
/// list several times slower for each of the read model's rows.
pub(crate) fn queue_candidates_sql(column: &str) -> String {
    let each: Vec<String> = queue_candidate_constants()
        .iter()
        .map(|c| format!("+{column} = {c}"))
        .collect();
    format!("({})", each.join(" OR "))
}

/// The reserved rows the index `settle_operations_reserved_lease` holds;
/// `+` as in [`queue_candidates_sql`], so that index, not the state index,
/// counts the stale ones.
pub(crate) const STALE_CANDIDATES: &str = "+state = 'reserved'";

/// A lease as seconds since the epoch, whatever form a service wrote it in:
/// RFC 3339 with any offset, SQLite's `datetime('now')` form, or epoch
/// seconds (a TEXT column stores them as digits: [`crate::domain::parse_time`]
/// reads the same forms). No lease is 0 (stale: nobody owns it, see
/// [`crate::domain::stale_reservation`]); text that is not a time is NULL
/// (never stale). The index `settle_operations_reserved_lease` is on this
/// exact expression.
pub(crate) fn instant_sql(column: &str) -> String {
    format!(
        "(CASE WHEN {column} IS NULL THEN 0 \
         WHEN typeof({column}) IN ('integer', 'real') \
           OR ({column} GLOB '[0-9]*' AND {column} NOT GLOB '*[^0-9.]*') \
           THEN CAST({column} AS INTEGER) \
         ELSE unixepoch({column}) END)"
    )
}

/// The FROM of counts and the Clusters view: the read model's rows.
const FROM_DERIVED: &str = "rm.settle_ops o";

/// A row of the read model `model` still says what the ledger's operation
/// `ledger` says in every column a filter or a sort reads (`IS`: a NULL
/// equals a NULL), so a row the keeper has not caught up with yet never
/// shows under a filter it fails. The keeper's sweep uses it too.
pub(crate) fn same_as_ledger(model: &str, ledger: &str) -> String {
    [
        "state",
        "account",
        "op_type",
        "idem_key",
        "result_id",
        "lease_expires_at",
        "created_at",
        "updated_at",
        "version",
    ]
    .map(|c| format!("{model}.{c} IS {ledger}.{c}"))
    .join(" AND ")
}

/// A list row: found through the read model `o` (its indexes serve every
/// filter), read from the ledger's `operations t` by primary key, and kept
/// only while the two agree.
static ROW_SOURCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT t.id, t.state, t.account, t.op_type, t.idem_key,
    o.attempts, t.max_attempts, o.last_event, o.last_error,
    t.result_id, CAST(t.lease_expires_at AS TEXT), t.created_at, t.updated_at, t.version,
    CASE WHEN t.state = 'retry_pending' THEN (SELECT r.status FROM retry_requests r
        WHERE r.op_id = t.id ORDER BY r.id DESC LIMIT 1) END
    FROM rm.settle_ops o JOIN main.operations t ON t.id = o.id AND {}",
        same_as_ledger("o", "t")
    )
});

/// [`ROW_SOURCE`] without the agreement check, for a list nothing filters.
static ROW_SOURCE_UNFILTERED: LazyLock<String> =
    LazyLock::new(|| ROW_SOURCE.replace(&format!(" AND {}", same_as_ledger("o", "t")), ""));

/// One operation's events through the read model's index of events by
/// operation, and those the keeper has not read yet from the ledger's tail
/// (a short range of its primary key), so the history is whole without an
/// index on the service's `events`.
const EVENTS_OF: &str = "id IN (SELECT event_id FROM rm.settle_events WHERE op_id = {key}
    UNION SELECT id FROM main.events
        WHERE id > (SELECT events FROM rm.settle_marks) AND op_id = {key})";

/// An operation's newest event without an index on the service's
/// `events`: a scan back from the newest event, quick for a page of new
/// operations, but as long as the table for an old one.
macro_rules! last_event_scan {
    () => {
        "(SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1)"
    };
}
pub(in crate::store::sqlite) const LAST_EVENT_SCAN: &str = last_event_scan!();

/// Each operation's newest event id, gathered once (one pass over
/// `events`) for a list of every row, which would otherwise scan `events`
/// once per old operation.
pub(in crate::store::sqlite) const LAST_EVENTS: &str =
    "CREATE TEMP TABLE settle_last_events AS SELECT op_id, max(id) AS id FROM main.events
         GROUP BY op_id;
     CREATE INDEX temp.settle_last_events_op ON settle_last_events (op_id)";

/// [`LAST_EVENT_SCAN`] through [`LAST_EVENTS`].
pub(in crate::store::sqlite) const LAST_EVENT_GATHERED: &str = "(SELECT e.event FROM events e
    WHERE e.id = (SELECT m.id FROM temp.settle_last_events m WHERE m.op_id = o.id))";

/// The same row for a ledger shown read-only without adopting it (no
/// summary table): three subqueries per row, still bounded by the page.
const ROW_SOURCE_UNADOPTED: &str = concat!(
    "SELECT o.id, o.state, o.account, o.op_type, o.idem_key,
    (SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id),
    o.max_attempts, ",
    last_event_scan!(),
    ",
    (SELECT a.error FROM attempts a WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1),
    o.result_id, CAST(o.lease_expires_at AS TEXT), o.created_at, o.updated_at, o.version,
    NULL
    FROM operations o"
);

const ATTEMPTS: &str = "(SELECT COUNT(*) FROM attempts a WHERE a.op_id = o.id)";

const LAST_ERROR: &str =
    "(SELECT a.error FROM attempts a WHERE a.op_id = o.id ORDER BY a.attempt DESC LIMIT 1)";

/// SQLite's spelling. `derived`: the read model is attached as `rm`, so
/// reads find their rows through it (as `o`) instead of aggregating.
/// `indexed`: the text terms of the query at hand whose candidates the
/// read model's trigram index gives ([`crate::store::sql::Dialect::text_candidates`]).
#[derive(Debug, Clone)]
pub(crate) struct SqliteSql {
    pub derived: bool,
    pub indexed: Vec<(TextTerm, String)>,
}

/// Through the read model, no text term indexed.
pub(crate) static DERIVED: SqliteSql = SqliteSql {
    derived: true,
    indexed: Vec::new(),
};

/// A ledger read without its read model.
pub(crate) static UNDERIVED: SqliteSql = SqliteSql {
    derived: false,
    indexed: Vec::new(),
};

/// The values of the trigram index (`rm.settle_texts`) holding the text at
/// placeholder `p` (an FTS5 phrase) as a substring, folding case as
/// widely as `LIKE` or more: a superset of what the term's `LIKE` keeps.
fn texts_holding(p: &str) -> String {
    format!("SELECT rowid FROM rm.settle_texts_fts WHERE settle_texts_fts MATCH {p}")
}

/// The candidates of an `err:` term in `rm`: operations mapped to a
/// matching error.
pub(crate) fn candidates_sql(p: &str) -> String {
    format!(
        "SELECT op_id FROM rm.settle_error_ops WHERE text_id IN ({})",
        texts_holding(p)
    )
}

/// `text` as an FTS5 phrase: quoted, its quotes doubled, so every
/// character is literal.
pub(crate) fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

impl Dialect for SqliteSql {
    fn param_prefix(&self) -> char {
        '?'
    }

    /// The unary `+`: SQLite then filters the rows it walks in id order
    /// instead of reading the column's index and sorting.
    fn unindexed(&self, column: &str) -> String {
        format!("+{column}")
    }

    fn queue_candidates(&self, column: &str) -> String {
        queue_candidates_sql(column)
    }

    /// Through [`instant_sql`], the expression the lease index is on.
    fn lease_passed(&self, column: &str, now: &str) -> String {
        format!("{} <= {now}", instant_sql(column))
    }

    /// SQLite's text compares byte by byte already.
    fn bytewise(&self, column: &str) -> String {
        column.to_string()
    }

    /// SQLite's `LIKE` ignores the case of ASCII letters only.
    fn contains(&self, column: &str, p: &str) -> String {
        format!("{column} LIKE {p} ESCAPE '\\'")
    }

    /// `*` is GLOB's wildcard; its other metacharacters are taken literally.
    fn glob(&self, pattern: &str) -> (&'static str, String) {
        let mut out = String::with_capacity(pattern.len());
        for c in pattern.chars() {
            match c {
                '?' => out.push_str("[?]"),
                '[' => out.push_str("[[]"),
                c => out.push(c),
            }
        }
        ("GLOB", out)
    }

    fn from(&self) -> &'static str {
        if self.derived {
            FROM_DERIVED
        } else {
            "operations o"
        }
    }

    fn row_source(&self) -> &'static str {
        if self.derived {
            &ROW_SOURCE
        } else {
            ROW_SOURCE_UNADOPTED
        }
    }

    fn unfiltered_row_source(&self) -> &'static str {
        if self.derived {
            &ROW_SOURCE_UNFILTERED
        } else {
            ROW_SOURCE_UNADOPTED
        }
    }

    /// The read model keeps the last attempt's start.
    fn stuck_since(&self) -> &'static str {
        if self.derived {
            "coalesce(o.last_attempt_at, o.updated_at)"
        } else {
            crate::store::sql::LAST_ATTEMPT_STARTED
        }
    }

    fn attempts(&self) -> &'static str {
        if self.derived { "o.attempts" } else { ATTEMPTS }
    }

    fn last_error(&self) -> &'static str {
        if self.derived {
            "o.last_error"
        } else {
            LAST_ERROR
        }
    }

    fn epoch_seconds(&self, column: &str) -> String {
        instant_sql(column)
    }

    /// Read from the read model when it is there.
    fn sort(&self, column: SortColumn) -> &'static str {
        match (column, self.derived) {
            (SortColumn::Id, _) => "o.id",
            (SortColumn::Created, _) => "o.created_at",
            (SortColumn::Updated, _) => "o.updated_at",
            (SortColumn::Account, _) => "o.account",
            (SortColumn::OpType, _) => "o.op_type",
            (SortColumn::Attempts, true) => "o.attempts",
            (SortColumn::Attempts, false) => ATTEMPTS,
            (SortColumn::LastEvent, true) => "coalesce(o.last_event, '')",
            (SortColumn::LastEvent, false) => {
                "coalesce((SELECT e.event FROM events e WHERE e.op_id = o.id ORDER BY e.id DESC LIMIT 1), '')"
            }
        }
    }

    /// Times are text: the key compares as it was shown.
    fn sort_text(&self, _: SortColumn, p: String) -> String {
        p
    }

    /// A service may store a lease as epoch seconds; the domain reads the
    /// digits.
    fn as_text(&self, column: &str) -> String {
        format!("CAST({column} AS TEXT)")
    }

    fn events_of(&self, key: &str) -> String {
        if self.derived {
            EVENTS_OF.replace("{key}", key)
        } else {
            format!("op_id = {key}")
        }
    }

    /// SQLite's columns take any value.
    fn typed(&self, literal: &str, _: &str) -> String {
        literal.to_string()
    }

    fn table_count(&self) -> &'static str {
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1"
    }

    fn text_candidates(&self, term: TextTerm, text: &str, args: &mut Args) -> Option<String> {
        if !self.indexed.iter().any(|(t, x)| *t == term && x == text) {
            return None;
        }
        let p = args.text(phrase(text));
        Some(format!("o.id IN ({})", candidates_sql(&p)))
    }
}

/// An argument as SQLite binds it: an instant as epoch seconds, as leases
/// are compared ([`instant_sql`]).
impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Arg::Int(n) => ToSqlOutput::Owned(Value::Integer(*n)),
            Arg::Text(t) => ToSqlOutput::Borrowed(t.as_str().into()),
            Arg::Instant(t) => ToSqlOutput::Owned(Value::Integer(t.timestamp())),
        })
    }
}
