//! PostgreSQL's errors said as settle's: the SQLSTATE sorted by what it
//! means (busy, a broken race, a lost connection, refused, cancelled), the
//! text sanitised (a server message may quote ledger text), so callers never
//! ask which database failed.

use std::path::Path;
use std::time::Duration;

use super::stop_reasons::{Asked, Stopped};
use crate::error::{Error, Fault};

/// The SQLSTATE of a statement stopped by a cancel request or by the
/// statement timeout: one code for both.
const QUERY_CANCELED: &str = "57014";

/// A PostgreSQL error while `doing` something, said as settle's, where
/// settle keeps no record of what it asked of the connection (a write, a
/// session's setup): a stopped statement is said as stopped, by whom
/// unknown.
pub(crate) fn pg_error(shown: &Path, doing: &str, e: postgres::Error) -> Error {
    said(shown, doing, e, None)
}

/// [`pg_error`] on a reading connection whose record `asked` tells a
/// stopped statement's cause: settle's own cancel as [`Error::Interrupted`]
/// (a newer read took its place, dropped silently), the statement timeout
/// in words (else the screen waits forever), anyone else's cancel as such.
pub(crate) fn pg_error_asked(
    shown: &Path,
    doing: &str,
    e: postgres::Error,
    asked: &Asked,
) -> Error {
    said(shown, doing, e, Some(asked))
}

fn said(shown: &Path, doing: &str, e: postgres::Error, asked: Option<&Asked>) -> Error {
    let code = e.code().map(|c| c.code().to_string());
    let mut problem = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => with_source(&e),
    };
    if code.as_deref() == Some(QUERY_CANCELED) {
        problem = match asked.map(Asked::stopped) {
            Some(Stopped::ByUs) => {
                return Error::Interrupted {
                    doing: doing.to_string(),
                };
            }
            Some(Stopped::Timeout(after)) => format!(
                "stopped after {} (the statement timeout); narrow the filter",
                seconds(after)
            ),
            Some(Stopped::Outside(after)) => format!(
                "cancelled after {} by a request from outside settle (pg_cancel_backend)",
                seconds(after)
            ),
            None => "stopped by the server (a cancel request or a timeout)".to_string(),
        };
    }
    let fault = match &code {
        Some(code) => fault(code),
        None if e.is_closed() || io_failure(&e) => Fault::Lost,
        None => Fault::Other,
    };
    Error::Database {
        path: shown.to_path_buf(),
        doing: doing.to_string(),
        problem: crate::text::sanitize(&problem).into_owned(),
        fault,
    }
}

/// A duration as the status line says it: whole seconds, or milliseconds
/// under one.
fn seconds(d: Duration) -> String {
    match d.as_secs() {
        0 => format!("{} ms", d.as_millis()),
        s => format!("{s} s"),
    }
}

/// The client library's error with its cause: its own text alone can be
/// as bare as "invalid configuration" (a password missing, a bad port
/// count).
pub(super) fn with_source(e: &postgres::Error) -> String {
    let text = e.to_string();
    match std::error::Error::source(e).map(ToString::to_string) {
        Some(cause) if !text.contains(&cause) => format!("{text}: {cause}"),
        _ => text,
    }
}

/// What kind of failure `e` is, the SQLSTATE read as [`pg_error`] reads it
/// (`None`: no SQLSTATE, the client's own failure).
pub(super) fn fault_of(e: &postgres::Error) -> Option<Fault> {
    e.code().map(|c| fault(c.code()))
}

/// What a SQLSTATE means, by its class where the class says it.
fn fault(code: &str) -> Fault {
    match code {
        // lock_not_available: lock_timeout ran out waiting for a row lock.
        "55P03" => Fault::Busy,
        // serialization_failure, deadlock_detected.
        "40001" | "40P01" => Fault::Conflict,
        // The server shut down or is starting (a restart, a failover).
        "57P01" | "57P02" | "57P03" => Fault::Lost,
        QUERY_CANCELED => Fault::Cancelled,
        // insufficient_privilege, read_only_sql_transaction.
        "42501" | "25006" => Fault::Refused,
        // connection_exception.
        _ if code.starts_with("08") => Fault::Lost,
        // integrity_constraint_violation; raise_exception (the audit
        // trail's guards).
        _ if code.starts_with("23") || code == "P0001" => Fault::Refused,
        _ => Fault::Other,
    }
}

/// The client could not reach the server at all (refused, reset, timed out).
fn io_failure(e: &postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// [`Error::Database`] for a failure settle itself found on a connection
/// (no driver error to classify).
pub(super) fn failure(shown: &Path, doing: &str, problem: &str, fault: Fault) -> Error {
    Error::Database {
        path: shown.to_path_buf(),
        doing: doing.to_string(),
        problem: crate::text::sanitize(problem).into_owned(),
        fault,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SQLSTATEs a worker meets in production, each with what it means
    /// for waiting: a restart or failover and a lock wait are waited out, a
    /// permission or a guard is reported.
    #[test]
    fn each_sqlstate_says_what_it_means() {
        let cases = [
            ("55P03", Fault::Busy),
            ("40001", Fault::Conflict),
            ("40P01", Fault::Conflict),
            ("57P01", Fault::Lost),
            ("57P03", Fault::Lost),
            ("08006", Fault::Lost),
            ("08001", Fault::Lost),
            ("57014", Fault::Cancelled),
            ("42501", Fault::Refused),
            ("25006", Fault::Refused),
            ("23505", Fault::Refused),
            ("P0001", Fault::Refused),
            ("42P01", Fault::Other),
        ];
        for (code, meaning) in cases {
            assert_eq!(fault(code), meaning, "SQLSTATE {code}");
        }
    }
}
