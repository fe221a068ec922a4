//! A statement the server stopped is told by what settle asked for, never
//! by the server's words (which a server with translated messages says in
//! its own language): settle's own cancel is dropped silently, its
//! statement timeout is said, and anyone else's cancel is said as such.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use chrono::Utc;

use super::read::{hold_lock, ledger};
use crate::domain::Seek;
use crate::error::{Error, Fault};
use crate::query::Query;
use crate::store::backend::{Reads as _, Session as _};
use crate::store::postgres::conn::Pg;

impl Pg {
    /// Sets the session's statement timeout, as settle's setup does, and
    /// records it.
    pub(crate) fn time_out_after(&self, timeout: Duration) {
        self.client
            .borrow_mut()
            .batch_execute(&format!("SET statement_timeout = {}", timeout.as_millis()))
            .unwrap();
        self.asked.timed(timeout);
    }
}

/// The server process of `pg`'s reading connection.
fn backend_pid(pg: &Pg) -> i32 {
    pg.client
        .borrow_mut()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0)
}

#[test]
fn a_cancel_from_outside_settle_is_said_not_dropped_as_settles_own() {
    let Some((pg, mut service)) = ledger("outside_cancel") else {
        return;
    };
    let pid = backend_pid(&pg);
    let mut lock = hold_lock(&mut service);
    let (done, finished) = mpsc::channel();
    let reader = thread::spawn(move || {
        let result = pg.count(&Query::parse("attempts>2").unwrap(), Utc::now());
        done.send(()).unwrap();
        result
    });
    // An administrator's cancel, from another session: the same SQLSTATE
    // and the same words as settle's own cancel would bring back.
    while finished.recv_timeout(Duration::from_millis(50)).is_err() {
        lock.execute("SELECT pg_cancel_backend($1)", &[&pid])
            .unwrap();
    }
    let result = reader.join().unwrap();
    drop(lock);
    let err = result.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            Error::Database {
                fault: Fault::Cancelled,
                ..
            }
        ) && text.contains("from outside settle"),
        "{text}"
    );
}

#[test]
fn a_cancel_that_found_nothing_running_leaves_the_next_timeout_said() {
    let Some((pg, mut service)) = ledger("stale_cancel") else {
        return;
    };
    // Sent while the connection is idle: the server drops it. The client
    // library returns once the request is written, before the server has
    // acted on it (libpq waits for that); on a loaded machine the request
    // could land on the statement below, which is not what this tests.
    pg.interrupt_handle().interrupt();
    std::thread::sleep(Duration::from_millis(500));
    pg.time_out_after(Duration::from_millis(100));
    let lock = hold_lock(&mut service);
    let err = pg
        .page(&Query::default(), Seek::First, 10, Utc::now())
        .unwrap_err();
    drop(lock);
    let text = err.to_string();
    assert!(
        matches!(err, Error::Database { .. }) && text.contains("the statement timeout"),
        "{text}"
    );
}
