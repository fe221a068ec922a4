//! The library's typed errors. Each variant says what went wrong, where (the
//! file, the row, the field) and what to do next, and maps to the exit status
//! the CLI documents. No variant is ever a panic.

use std::path::PathBuf;

use std::time::Duration;

use crate::domain::{DecisionId, OperationId, rules::Rule};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ledger file could not be used as a ledger: not SQLite, a newer
    /// schema, a missing table or column, unreadable.
    #[error("{path}: {problem}\n  what to do: {hint}", path = path.display())]
    Ledger {
        path: PathBuf,
        problem: String,
        hint: String,
    },

    /// The database failed while doing something the message names.
    /// `path` is the ledger as shown (`user@host/db` for a server, never
    /// with a password); `problem` is the database's own message, already
    /// sanitised where it may quote ledger text; `fault` says what kind of
    /// failure it is, so a caller decides whether to wait and try again
    /// without knowing which database said it.
    #[error("{path}: {doing}: {problem}{hint}", path = path.display(), hint = lost_hint(*fault, doing, problem))]
    Database {
        path: PathBuf,
        doing: String,
        problem: String,
        fault: Fault,
    },

    /// A file could not be read or written.
    #[error("{path}: {doing}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        doing: String,
        #[source]
        source: std::io::Error,
    },

    /// The operation named on the command line or in the console is not in
    /// the ledger.
    #[error("{path}: no operation {what}\n  what to do: check the id with `settle list`, or use account/op_type/key", path = path.display())]
    NotFound { path: PathBuf, what: String },

    /// `account/op_type/key` names more than one operation (a ledger made
    /// without the UNIQUE constraint); like git with an ambiguous name, the
    /// candidates are listed and nothing is guessed.
    #[error("{path}: {spec} is ambiguous: it names {n} operations: {list}\n  what to do: give the id instead, e.g. `settle show {path} {first}`",
        path = path.display(), spec = crate::text::sanitize(spec), n = ids.len(),
        list = ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        first = ids.first().map(ToString::to_string).unwrap_or_default())]
    Ambiguous {
        path: PathBuf,
        spec: String,
        ids: Vec<OperationId>,
    },

    /// A decision refused by a rule of the contract; nothing was written.
    #[error("refused: operation {op}: {rule}: {reason}\n  nothing was written", rule = rule.label())]
    Refused {
        op: OperationId,
        rule: Rule,
        reason: String,
    },

    /// Another writer changed the operation since the operator looked at it;
    /// nothing was written.
    #[error(
        "version conflict: operation {op} is at version {found} (state {state}), not {expected}{by}\n  nothing was written; look again (`settle show`) and decide on what is there now",
        by = last_writer.as_deref().map(|w| format!("; last changed by {w}")).unwrap_or_default()
    )]
    VersionConflict {
        op: OperationId,
        expected: i64,
        found: i64,
        state: String,
        last_writer: Option<String>,
    },

    /// A drill results file could not be read as one.
    #[error("{path}{at}: {problem}\n  what to do: {hint}", path = path.display(),
        at = position.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Drill {
        path: PathBuf,
        position: Option<(usize, usize)>,
        problem: String,
        hint: String,
    },

    /// The receivers file (`receivers.toml`) could not be read or is not
    /// a receivers file: the line and column when the parser knows them.
    #[error("{path}{at}: {problem}\n  what to do: {hint}", path = path.display(),
        at = position.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Receivers {
        path: PathBuf,
        position: Option<(usize, usize)>,
        problem: String,
        hint: String,
    },

    /// Another process held the ledger's write lock for the whole busy
    /// timeout; nothing was written.
    #[error("{path}: {text}\n  what to do: try again once the other writer is done, or wait longer with --wait SECONDS",
        path = path.display(), text = busy_text(*waited))]
    Busy { path: PathBuf, waited: Duration },

    /// A write to a PostgreSQL ledger whose address lists a primary and its
    /// standbys, when no host answered as the primary (a failover under
    /// way): refused before anything was sent.
    #[error("{path}: no primary reachable; nothing was written\n  what to do: try again once a standby is promoted (reads still work from a standby)", path = path.display())]
    NoPrimary { path: PathBuf },

    /// The connection to a PostgreSQL ledger broke after a decision's
    /// COMMIT was sent, so its answer never came. `checked`: settle
    /// reconnected and looked, and the decision is not in the ledger
    /// (nothing was written); otherwise it could not look. (Found, it is
    /// reported as recorded, with its receipt.)
    #[error("{path}: the connection broke while committing the decision; {found}\n  what to do: {hint}",
        path = path.display(),
        found = if *checked {
            "settle reconnected and looked: it was NOT recorded, nothing was written"
        } else {
            "settle could not reconnect to look whether it was recorded"
        },
        hint = if *checked {
            "decide again; the version check keeps a decision from being recorded twice"
        } else {
            "look with `settle show` before deciding again; a second decision on the same version is refused (exit 4)"
        })]
    ConnectionLost { path: PathBuf, checked: bool },

    /// The audit trail's hash chain does not hold at a decision: a row was
    /// edited or deleted behind settle's back.
    #[error("{path}: audit trail broken at decision {at}: {problem}\n  what to do: compare that decision with a backup or the service's own records; settle changed nothing in the trail", path = path.display())]
    ChainBroken {
        path: PathBuf,
        at: DecisionId,
        problem: String,
    },

    /// A read was cancelled through [`crate::store::Ledger::interrupt_handle`]
    /// (the filter or view changed); nothing failed, drop the result.
    #[error("cancelled: {doing}")]
    Interrupted { doing: String },

    /// A decision over every row a filter matched wrote some rows and
    /// skipped others (refused by a rule, or changed since they were
    /// listed); stdout lists which.
    #[error(
        "{written} of {matched} written; {refused} refused by a rule, {conflicted} changed since they were listed (skipped, not overwritten)\n  what to do: look at the rows the summary lists (`settle show`) and decide on what is there now"
    )]
    BulkIncomplete {
        matched: usize,
        written: usize,
        refused: usize,
        conflicted: usize,
    },

    /// The reference receiver's answer when it is not "yes", carried in
    /// its exit status as the receivers contract says (3: no record of the
    /// key, or refused as a conflict; 4: cannot tell).
    #[error("{message}")]
    ReceiverAnswer { code: i32, message: String },

    /// One of several ledgers a command read failed; `name` is its name in
    /// the set (see [`crate::cli::ledger_set`]).
    #[error("{name}: {source}")]
    InLedger {
        name: String,
        #[source]
        source: Box<Error>,
    },

    /// Some of several ledgers could not be opened or read; each one's
    /// reason was said on stderr as it happened, and the others' rows
    /// were printed.
    #[error("{} of {of} ledgers could not be read: {} (each says why above); the others' rows were printed", failed.len(), failed.join(", "))]
    LedgersUnread { failed: Vec<String>, of: usize },

    /// Operator input that does not make sense (a bad filter, a bad flag
    /// combination the parser could not catch).
    #[error("{0}")]
    Usage(String),

    /// `settle probe`: some lookups could not tell whether the effect
    /// exists. Every answer was recorded; the lines printed say why each
    /// one was unknown.
    #[error(
        "{unknown} of {total} lookups read unknown (each was recorded; its line says why)\n  what to do: fix the receiver or its lookup command, then probe those operations again"
    )]
    ProbesUnknown { unknown: usize, total: usize },
}

impl Error {
    /// `source`, said of the ledger named `name` in a group.
    pub fn in_ledger(name: &str, source: Error) -> Error {
        Error::InLedger {
            name: name.to_string(),
            source: Box::new(source),
        }
    }

    /// The process exit status the CLI documents: 1 error, 2 usage,
    /// 3 refused by a rule (a bulk decision: any row), 4 version conflict
    /// (a bulk decision: any row, none refused), 5 ledger busy (a script may
    /// retry on 4 after looking again, on 5 as it is), 6 a probe read
    /// unknown.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::InLedger { source, .. } => source.exit_code(),
            Error::Refused { .. } => 3,
            // A refused row stays refused when tried again; only a
            // conflicted one is worth looking at again and retrying.
            Error::BulkIncomplete { refused, .. } if *refused > 0 => 3,
            Error::BulkIncomplete { .. } => 4,
            Error::VersionConflict { .. } => 4,
            Error::Busy { .. } | Error::NoPrimary { .. } => 5,
            Error::ProbesUnknown { .. } => 6,
            Error::ReceiverAnswer { code, .. } => *code,
            _ => 1,
        }
    }

    /// A lock another writer held for the whole wait of `waited`, said as
    /// [`Error::Busy`]; any other error as it is.
    pub(crate) fn busy_after(self, waited: Duration) -> Self {
        match self {
            Error::Database {
                path,
                fault: Fault::Busy,
                ..
            } => Error::Busy { path, waited },
            other => other,
        }
    }

    /// Whether the same call may well succeed a little later: another
    /// writer held a lock, the database broke a race between two writers,
    /// or the connection to a server broke (a restart, a failover). A
    /// long-running worker waits these out; anything else is reported.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Busy { .. } | Error::ConnectionLost { .. } | Error::NoPrimary { .. } => true,
            Error::Database { fault, .. } => matches!(
                fault,
                Fault::Busy | Fault::Conflict | Fault::Lost | Fault::Cancelled
            ),
            _ => false,
        }
    }

    /// Whether the connection to a server broke under the call (not a
    /// commit cut short: that is [`Error::ConnectionLost`]).
    pub(crate) fn is_lost_connection(&self) -> bool {
        matches!(
            self,
            Error::Database {
                fault: Fault::Lost,
                ..
            }
        )
    }

    /// This error, from a call whose connection settle cut after `waited`
    /// without an answer, said as that: a lost connection's text alone
    /// ("connection closed") would blame the server.
    pub(crate) fn stalled(self, waited: Duration) -> Error {
        match self {
            Error::Database {
                path,
                doing,
                fault: Fault::Lost,
                ..
            } => Error::Database {
                path,
                doing,
                problem: format!(
                    "no answer from the server for {}, so settle closed the connection \
                     (the network to the server, or the server, stalled)",
                    seconds(waited)
                ),
                fault: Fault::Lost,
            },
            other => other,
        }
    }

    pub(crate) fn ledger(
        path: &std::path::Path,
        problem: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Error::Ledger {
            path: path.to_path_buf(),
            problem: problem.into(),
            hint: hint.into(),
        }
    }
}

/// What kind of failure a database reported, whichever database it was:
/// each backend sorts its driver's errors into these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A lock another writer held did not come free in time.
    Busy,
    /// The database broke a race between two writers (a serialization
    /// failure, a deadlock); the transaction may be run again.
    Conflict,
    /// The connection to the database broke or could not be made.
    Lost,
    /// The database refused the statement: a constraint, a permission, a
    /// read-only database or transaction.
    Refused,
    /// The statement was stopped before it finished (a statement timeout).
    Cancelled,
    /// The file is not a database, or its pages are malformed.
    Damaged,
    /// The disk holding the file is full.
    Full,
    /// Anything else: a bug.
    Other,
}

/// What an operator does about a connection that broke or could not be
/// made; nothing for any other failure. Before a connection there is
/// nothing written to doubt; a commit cut short is
/// [`Error::ConnectionLost`]'s to tell. Said once, where one error wraps
/// another.
fn lost_hint(fault: Fault, doing: &str, problem: &str) -> &'static str {
    if problem.contains("what to do:") {
        return "";
    }
    match (fault, doing) {
        (Fault::Lost, "connecting") => {
            "; nothing was written\n  what to do: the server is down, starting or out of reach: run the command again once it answers (`pg_isready`)"
        }
        (Fault::Lost, _) => {
            "\n  what to do: the server is down, starting or out of reach: run the command again once it answers (`pg_isready`)"
        }
        _ => "",
    }
}

/// What a busy ledger means, in the ledger's words; the CLI's error and the
/// console's decision form both say it.
pub fn busy_text(waited: Duration) -> String {
    match waited.as_secs() {
        0 => "ledger busy: another process holds the write lock; nothing was written".to_string(),
        s => format!(
            "ledger busy: another process has held the write lock for {s} s; nothing was written"
        ),
    }
}

/// A wait said in seconds, a tenth shown where it has one (`1.5 s`, `30 s`).
fn seconds(waited: Duration) -> String {
    let tenths = waited.as_millis().div_ceil(100);
    if tenths.is_multiple_of(10) {
        format!("{} s", tenths / 10)
    } else {
        format!("{}.{} s", tenths / 10, tenths % 10)
    }
}
