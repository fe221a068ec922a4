//! Copying a whole ledger into an empty one, between backends or not, so a
//! team can move from SQLite to PostgreSQL with its history and its chain:
//! which tables and columns go, in which order, and the
//! neutral value a cell travels as. Each backend reads its rows into
//! [`Value`]s and writes them back in its own types; decisions keep their
//! stored chain hashes (never recomputed), so the copy verifies only if the
//! rows arrived unchanged. No SQL beyond the column lists lives here.

/// What a column holds, so each backend reads and writes it in its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int,
    Text,
    /// An instant: text in SQLite, `timestamptz` in PostgreSQL.
    Time,
    /// A flag: 0/1 in SQLite, `boolean` in PostgreSQL.
    Bool,
}

/// One cell on its way between ledgers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
}

/// One table of the copy.
#[derive(Debug)]
pub(crate) struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
    /// The copy's order: ids ascending, so decisions chain in order.
    pub order: &'static str,
    /// One of the console's tables, absent from a service's unadopted ledger.
    pub console: bool,
    /// Its `id` comes from an identity in PostgreSQL, to be moved past the
    /// copied ids.
    pub identity: bool,
    /// Columns a ledger older than SQLite schema 5 lacks, with the value
    /// that stands in for them (their column default).
    pub added_later: &'static [(&'static str, &'static str)],
    /// Made by its first row (`settle_drills`): the destination has it
    /// only when the source has rows of it, so a copy of a ledger never
    /// drilled stays as one.
    pub made_on_use: bool,
}

use std::path::Path;

use crate::error::{Error, Result};

use Kind::{Bool, Int, Text, Time};

/// Every table, in the order rows are copied (a row's references first).
pub(crate) const TABLES: [Table; 8] = [
    Table {
        name: "op_types",
        columns: &[
            ("op_type", Text),
            ("idempotent", Bool),
            ("key_retention_s", Int),
            ("description", Text),
        ],
        order: "op_type",
        console: true,
        identity: false,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: "operations",
        columns: &[
            ("id", Int),
            ("account", Text),
            ("op_type", Text),
            ("idem_key", Text),
            ("fingerprint", Text),
            ("params", Text),
            ("state", Text),
            ("result_id", Text),
            ("max_attempts", Int),
            ("deadline_at", Time),
            ("lease_expires_at", Time),
            ("key_expires_at", Time),
            ("created_at", Time),
            ("updated_at", Time),
            ("version", Int),
        ],
        order: "id",
        console: false,
        identity: true,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: "attempts",
        columns: &[
            ("op_id", Int),
            ("attempt", Int),
            ("started_at", Time),
            ("ended_at", Time),
            ("outcome", Text),
            ("error", Text),
            ("response", Text),
        ],
        order: "op_id, attempt",
        console: false,
        identity: false,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: "events",
        columns: &[
            ("id", Int),
            ("op_id", Int),
            ("attempt", Int),
            ("at", Time),
            ("event", Text),
            ("detail", Text),
        ],
        order: "id",
        console: false,
        identity: true,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: "decisions",
        columns: &[
            ("id", Int),
            ("op_id", Int),
            ("decision", Text),
            ("from_state", Text),
            ("to_state", Text),
            ("result_id", Text),
            ("evidence", Text),
            ("note", Text),
            ("operator", Text),
            ("decided_at", Time),
            ("op_version", Int),
            ("undoes", Int),
            ("extra_attempt", Bool),
            ("chain_hash", Text),
        ],
        order: "id",
        console: true,
        identity: true,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: "retry_requests",
        columns: &[
            ("id", Int),
            ("op_id", Int),
            ("idem_key", Text),
            ("requested_at", Time),
            ("requested_by", Text),
            ("status", Text),
            ("decision_id", Int),
            ("claimed_by", Text),
            ("claim_expires_at", Time),
            ("runs", Int),
            ("finished_at", Time),
            ("outcome", Text),
        ],
        order: "id",
        console: true,
        identity: true,
        added_later: &[
            ("claimed_by", "NULL"),
            ("claim_expires_at", "NULL"),
            ("runs", "0"),
            ("finished_at", "NULL"),
            ("outcome", "NULL"),
        ],
        made_on_use: false,
    },
    Table {
        name: "settle_probes",
        columns: &[
            ("id", Int),
            ("op_id", Int),
            ("idem_key", Text),
            ("command", Text),
            ("outcome", Text),
            ("result_id", Text),
            ("exit", Text),
            ("output", Text),
            ("operator", Text),
            ("probed_at", Time),
            ("duration_ms", Int),
        ],
        order: "id",
        console: true,
        identity: true,
        added_later: &[],
        made_on_use: false,
    },
    Table {
        name: super::drills::TABLE,
        columns: &[
            ("id", Int),
            ("op_type", Text),
            ("run", Text),
            ("drilled_at", Text),
            ("results", Text),
            ("duplicate_case", Text),
            ("duplicate_why", Text),
            ("params_ignored", Int),
            ("flaws", Text),
            ("operator", Text),
        ],
        order: "id",
        console: true,
        identity: true,
        added_later: &[],
        made_on_use: true,
    },
];

impl Table {
    pub(crate) fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One placeholder a column, marked `mark` (`?1, ?2` or `$1, $2`).
    pub(crate) fn placeholders(&self, mark: char) -> String {
        (1..=self.columns.len())
            .map(|i| format!("{mark}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Refuses a destination that already holds operations or history, asking
/// `held` of each table: the copy would mix two ledgers and fork the chain.
/// Op types' contracts may be there (a hand-made ledger may hold some).
pub(crate) fn refuse_unless_empty(
    ledger: &Path,
    hint: &str,
    mut held: impl FnMut(&str) -> Result<bool>,
) -> Result<()> {
    // A table made on use may be absent; its ids would collide with the
    // copy's anyway, and fail it.
    for table in TABLES
        .iter()
        .filter(|t| t.name != "op_types" && !t.made_on_use)
    {
        if held(table.name)? {
            return Err(Error::ledger(
                ledger,
                format!("is not empty: it holds {}", table.name),
                hint.to_string(),
            ));
        }
    }
    Ok(())
}

/// How many rows of each table a copy wrote, in [`TABLES`] order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub tables: Vec<(&'static str, u64)>,
}

impl CopyReport {
    pub fn rows(&self, table: &str) -> u64 {
        self.tables
            .iter()
            .find(|(name, _)| *name == table)
            .map_or(0, |(_, n)| *n)
    }
}

/// The rows of a table made on use, read whole before the destination
/// makes it (a ledger holds a handful of drill verdicts), and a source
/// that hands them on as [`RowSource`] does.
pub(crate) struct Held {
    rows: Vec<Vec<Value>>,
}

impl Held {
    pub(crate) fn read(table: &Table, source: &mut RowSource) -> Result<Held> {
        let mut rows = Vec::new();
        source(table, &mut |values| {
            rows.push(values.to_vec());
            Ok(())
        })?;
        Ok(Held { rows })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Hands the rows on, once.
    pub(crate) fn source(&mut self) -> impl FnMut(&Table, &mut EachRow) -> Result<u64> + '_ {
        |_, each| {
            let mut n = 0;
            for values in self.rows.drain(..) {
                each(&values)?;
                n += 1;
            }
            Ok(n)
        }
    }
}

/// What takes each row of a table, lent.
pub(crate) type EachRow<'a> = dyn FnMut(&[Value]) -> Result<()> + 'a;

/// Streams one table of the source into `each`; returns how many rows.
pub(crate) type RowSource<'a> = dyn FnMut(&Table, &mut EachRow) -> Result<u64> + 'a;
