//! How a ledger row becomes a domain value, once for both backends: each
//! backend reads its own cells ([`CellRead`]: SQLite's and PostgreSQL's
//! tolerant readers, which flag a malformed cell instead of failing the
//! row), and these functions say which column is which field. No SQL here:
//! the column order is the one the shared SELECTs list.

use super::cells::CellRead;
use crate::domain::{
    Attempt, Decision, DecisionId, Event, Malformed, NewProbe, OpTypeContract, Operation,
    OperationId, OperationRow, Outcome, Probe, ProbeOutcome, RetryProgress, RetryRequest, State,
    StateCounts,
};

/// A list row: `id, state, account, op_type, idem_key, attempts,
/// max_attempts, last_event, last_error, result_id, lease_expires_at,
/// created_at, updated_at, version, retry status`. A malformed cell is
/// flagged on the row instead of failing the page.
pub(super) fn operation_row<C: CellRead + ?Sized>(c: &mut C) -> Result<OperationRow, C::Error> {
    Ok(OperationRow {
        id: OperationId(c.int(0, "id")?),
        state: State::parse(&c.text(1, "state")?),
        account: c.text(2, "account")?,
        op_type: c.text(3, "op_type")?,
        idem_key: c.text(4, "idem_key")?,
        attempts: c.int(5, "attempts")?,
        max_attempts: c.int(6, "max_attempts")?,
        last_event: c.opt_text(7, "last_event")?,
        last_error: c.opt_text(8, "last_error")?,
        result_id: c.opt_text(9, "result_id")?,
        lease_expires_at: c.opt_time(10, "lease_expires_at")?,
        created_at: c.time(11, "created_at")?,
        updated_at: c.time(12, "updated_at")?,
        version: c.int(13, "version")?,
        retry_status: c.opt_text(14, "retry_requests.status")?,
        malformed: c.take_malformed(),
        origin: None,
    })
}

/// `id, account, op_type, idem_key, fingerprint, params, state, result_id,
/// max_attempts, deadline_at, lease_expires_at, key_expires_at,
/// created_at, updated_at, version`.
pub(super) fn operation<C: CellRead + ?Sized>(c: &mut C) -> Result<Operation, C::Error> {
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
        origin: None,
    })
}

// The history rows below are read as tolerantly; their malformed cells are
// gathered on the detail by [`flagged`] (see `history_malformed`).

/// `op_id, attempt, started_at, ended_at, outcome, error, response`.
pub(super) fn attempt<C: CellRead + ?Sized>(
    c: &mut C,
) -> Result<(Attempt, Vec<Malformed>), C::Error> {
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
pub(super) fn event<C: CellRead + ?Sized>(c: &mut C) -> Result<(Event, Vec<Malformed>), C::Error> {
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
pub(super) fn decision<C: CellRead + ?Sized>(
    c: &mut C,
) -> Result<(Decision, Vec<Malformed>), C::Error> {
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
pub(super) fn retry_request<C: CellRead + ?Sized>(
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
pub(super) fn probe<C: CellRead + ?Sized>(c: &mut C) -> Result<(Probe, Vec<Malformed>), C::Error> {
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

/// `op_type, idempotent, key_retention_s, description`.
pub(super) fn contract<C: CellRead + ?Sized>(
    c: &mut C,
) -> Result<(OpTypeContract, Vec<Malformed>), C::Error> {
    let row = OpTypeContract {
        op_type: c.text(0, "op_type")?,
        idempotent: c.bool(1, "idempotent")?,
        key_retention_s: c.opt_int(2, "key_retention_s")?,
        description: c.opt_text(3, "description")?,
    };
    Ok((row, c.take_malformed()))
}

/// The rows without their flags, each flag kept in `out` as `attempt 2:
/// error: a 3-byte BLOB` (`whose` names the row).
pub(super) fn flagged<T>(
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

/// Operations per state from `(state, count)` rows, in the order of
/// [`State::KNOWN`] (a state settle does not know last), states counted 0
/// left out; `estimated` when some counts come from statistics.
pub(super) fn state_counts(
    raw: Vec<(String, i64)>,
    stale_reserved: i64,
    estimated: bool,
) -> StateCounts {
    let mut by_state: Vec<(State, i64)> = raw
        .into_iter()
        .filter(|(_, n)| *n != 0)
        .map(|(s, n)| (State::parse(&s), n))
        .collect();
    by_state.sort_by_key(|(s, _)| {
        State::KNOWN
            .iter()
            .position(|k| k == s)
            .unwrap_or(State::KNOWN.len())
    });
    let total = by_state.iter().map(|(_, n)| n).sum();
    StateCounts {
        by_state,
        stale_reserved,
        total,
        estimated,
    }
}
