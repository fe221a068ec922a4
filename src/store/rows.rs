//! How a ledger row becomes a domain value, once for both backends: each
//! backend reads its own cells ([`CellRead`]: SQLite's and PostgreSQL's
//! tolerant readers, which flag a malformed cell instead of failing the
//! row), and these functions say which column is which field. No SQL here:
//! the column order is the one each backend's SELECT lists.

use crate::domain::{
    Attempt, Decision, DecisionId, Event, Malformed, NewProbe, Operation, OperationId, Outcome,
    Probe, ProbeOutcome, RetryProgress, RetryRequest, State,
};

/// One row's cells, read tolerantly; `E` is the backend's error.
pub(crate) trait CellRead {
    type Error;
    fn text(&mut self, i: usize, column: &'static str) -> Result<String, Self::Error>;
    fn opt_text(&mut self, i: usize, column: &'static str) -> Result<Option<String>, Self::Error>;
    fn time(&mut self, i: usize, column: &'static str) -> Result<String, Self::Error>;
    fn opt_time(&mut self, i: usize, column: &'static str) -> Result<Option<String>, Self::Error>;
    fn int(&mut self, i: usize, column: &'static str) -> Result<i64, Self::Error>;
    fn opt_int(&mut self, i: usize, column: &'static str) -> Result<Option<i64>, Self::Error>;
    /// The malformed cells met so far, taken.
    fn take_malformed(&mut self) -> Vec<Malformed>;
}

/// `id, account, op_type, idem_key, fingerprint, params, state, result_id,
/// max_attempts, deadline_at, lease_expires_at, key_expires_at,
/// created_at, updated_at, version`.
pub(crate) fn operation<C: CellRead>(c: &mut C) -> Result<Operation, C::Error> {
    Ok(Operation {
        id: OperationId(c.int(0, "id")?),
        account: c.text(1, "account")?,
        op_type: c.text(2, "op_type")?,
        idem_key: c.text(3, "idem_key")?,
        fingerprint: c.text(4, "fingerprint")?,
        params: c.opt_text(5, "params")?,
        state: State::parse(&c.text(6, "state")?),
        result_id: c.opt_text(7, "result_id")?,
        max_attempts: c.int(8, "max_attempts")?,
        deadline_at: c.opt_time(9, "deadline_at")?,
        lease_expires_at: c.opt_time(10, "lease_expires_at")?,
        key_expires_at: c.opt_time(11, "key_expires_at")?,
        created_at: c.time(12, "created_at")?,
        updated_at: c.time(13, "updated_at")?,
        version: c.int(14, "version")?,
        malformed: c.take_malformed(),
    })
}

// The history rows below are read as tolerantly; their malformed cells are
// gathered on the detail by [`flagged`] (see `history_malformed`).

/// `op_id, attempt, started_at, ended_at, outcome, error, response`.
pub(crate) fn attempt<C: CellRead>(c: &mut C) -> Result<(Attempt, Vec<Malformed>), C::Error> {
    let row = Attempt {
        op_id: OperationId(c.int(0, "op_id")?),
        attempt: c.int(1, "attempt")?,
        started_at: c.text(2, "started_at")?,
        ended_at: c.opt_text(3, "ended_at")?,
        outcome: Outcome::parse(&c.text(4, "outcome")?),
        error: c.opt_text(5, "error")?,
        response: c.opt_text(6, "response")?,
    };
    Ok((row, c.take_malformed()))
}

/// `id, op_id, attempt, at, event, detail`.
pub(crate) fn event<C: CellRead>(c: &mut C) -> Result<(Event, Vec<Malformed>), C::Error> {
    let row = Event {
        id: c.int(0, "id")?,
        op_id: OperationId(c.int(1, "op_id")?),
        attempt: c.opt_int(2, "attempt")?,
        at: c.text(3, "at")?,
        event: c.text(4, "event")?,
        detail: c.opt_text(5, "detail")?,
    };
    Ok((row, c.take_malformed()))
}

/// `id, op_id, decision, from_state, to_state, result_id, evidence, note,
/// operator, decided_at, op_version, undoes`.
pub(crate) fn decision<C: CellRead>(c: &mut C) -> Result<(Decision, Vec<Malformed>), C::Error> {
    let row = Decision {
        id: DecisionId(c.int(0, "id")?),
        op_id: OperationId(c.int(1, "op_id")?),
        decision: c.text(2, "decision")?,
        from_state: c.text(3, "from_state")?,
        to_state: c.text(4, "to_state")?,
        result_id: c.opt_text(5, "result_id")?,
        evidence: c.opt_text(6, "evidence")?,
        note: c.opt_text(7, "note")?,
        operator: c.text(8, "operator")?,
        decided_at: c.text(9, "decided_at")?,
        op_version: c.int(10, "op_version")?,
        undoes: c.opt_int(11, "undoes")?.map(DecisionId),
    };
    Ok((row, c.take_malformed()))
}

/// `id, op_id, idem_key, requested_at, requested_by, status, decision_id,
/// claimed_by, claim_expires_at, runs, finished_at, outcome`.
pub(crate) fn retry_request<C: CellRead>(
    c: &mut C,
) -> Result<(RetryRequest, Vec<Malformed>), C::Error> {
    let row = RetryRequest {
        id: c.int(0, "id")?,
        op_id: OperationId(c.int(1, "op_id")?),
        idem_key: c.text(2, "idem_key")?,
        requested_at: c.text(3, "requested_at")?,
        requested_by: c.text(4, "requested_by")?,
        status: c.text(5, "status")?,
        decision_id: DecisionId(c.int(6, "decision_id")?),
        progress: RetryProgress {
            claimed_by: c.opt_text(7, "claimed_by")?,
            claim_expires_at: c.opt_time(8, "claim_expires_at")?,
            runs: c.opt_int(9, "runs")?.unwrap_or(0),
            finished_at: c.opt_time(10, "finished_at")?,
            outcome: c.opt_text(11, "outcome")?,
        },
    };
    Ok((row, c.take_malformed()))
}

/// `id, op_id, idem_key, command, outcome, result_id, exit, output,
/// operator, probed_at, duration_ms`.
pub(crate) fn probe<C: CellRead>(c: &mut C) -> Result<(Probe, Vec<Malformed>), C::Error> {
    let row = Probe {
        id: c.int(0, "id")?,
        probe: NewProbe {
            op_id: OperationId(c.int(1, "op_id")?),
            idem_key: c.text(2, "idem_key")?,
            command: c.text(3, "command")?,
            outcome: ProbeOutcome::parse(&c.text(4, "outcome")?),
            result_id: c.opt_text(5, "result_id")?,
            exit: c.text(6, "exit")?,
            output: c.opt_text(7, "output")?,
            operator: c.text(8, "operator")?,
            probed_at: c.time(9, "probed_at")?,
            duration_ms: c.opt_int(10, "duration_ms")?.unwrap_or(0),
        },
    };
    Ok((row, c.take_malformed()))
}

/// The rows without their flags, each flag kept in `out` as `attempt 2:
/// error: a 3-byte BLOB` (`whose` names the row).
pub(crate) fn flagged<T>(
    rows: Vec<(T, Vec<Malformed>)>,
    out: &mut Vec<String>,
    whose: impl Fn(&T) -> String,
) -> Vec<T> {
    rows.into_iter()
        .map(|(row, cells)| {
            for m in &cells {
                out.push(format!("{}: {}: {}", whose(&row), m.column, m.found));
            }
            row
        })
        .collect()
}
