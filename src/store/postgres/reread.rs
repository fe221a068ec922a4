//! One operation's whole history as a decision reads it inside its own
//! transaction (after locking the row): the operation, its attempts, events,
//! decisions, retry requests and contract, as the domain types the rules
//! judge. Reads only; times come back in settle's text form
//! ([`format_time`]) so the rules see what they see on SQLite. The reading
//! part's tolerant `history::load_detail` takes the same arguments and
//! replaces this file once both are on main.

use chrono::{DateTime, Utc};
use postgres::{GenericClient, Row};

use crate::domain::{
    Attempt, Decision, DecisionId, Event, NewProbe, OpTypeContract, Operation, OperationDetail,
    OperationId, Outcome, Probe, ProbeOutcome, RetryProgress, RetryRequest, State, format_time,
};

const OPERATION_COLUMNS: &str = "id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, lease_expires_at, key_expires_at, created_at,
    updated_at, version";

/// The operation `id` with its history, or `None` when there is no such
/// operation. `console_tables`: decisions, retry requests and op types
/// exist (a read-only look at an unadopted database has none).
pub(super) fn load_detail(
    c: &mut impl GenericClient,
    id: OperationId,
    console_tables: bool,
) -> Result<Option<OperationDetail>, postgres::Error> {
    let sql = format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE id = $1::bigint");
    let Some(row) = c.query_opt(&sql, &[&id.0])? else {
        return Ok(None);
    };
    let operation = operation(&row)?;
    let attempts = c
        .query(
            "SELECT op_id, attempt, started_at, ended_at, outcome, error, response
             FROM attempts WHERE op_id = $1::bigint ORDER BY attempt",
            &[&id.0],
        )?
        .iter()
        .map(attempt)
        .collect::<Result<_, _>>()?;
    let events = c
        .query(
            "SELECT id, op_id, attempt, at, event, detail FROM events WHERE op_id = $1::bigint ORDER BY id",
            &[&id.0],
        )?
        .iter()
        .map(event)
        .collect::<Result<_, _>>()?;
    let (decisions, retry_requests, contract) = if console_tables {
        let decisions = c
            .query(
                "SELECT id, op_id, decision, from_state, to_state, result_id, evidence, note,
                     operator, decided_at, op_version, undoes
                 FROM decisions WHERE op_id = $1 ORDER BY id",
                &[&id.0],
            )?
            .iter()
            .map(decision)
            .collect::<Result<_, _>>()?;
        let retry_requests = c
            .query(
                "SELECT id, op_id, idem_key, requested_at, requested_by, status, decision_id,
                     claimed_by, claim_expires_at, runs, finished_at, outcome
                 FROM retry_requests WHERE op_id = $1 ORDER BY id",
                &[&id.0],
            )?
            .iter()
            .map(retry_request)
            .collect::<Result<_, _>>()?;
        let contract = c
            .query_opt(
                "SELECT op_type, idempotent, key_retention_s, description
                 FROM op_types WHERE op_type = $1",
                &[&operation.op_type],
            )?
            .map(|r| contract(&r))
            .transpose()?;
        (decisions, retry_requests, contract)
    } else {
        (Vec::new(), Vec::new(), None)
    };
    let probes = if console_tables {
        c.query(
            "SELECT id, op_id, idem_key, command, outcome, result_id, exit, output,
                 operator, probed_at, duration_ms
             FROM settle_probes WHERE op_id = $1 ORDER BY id",
            &[&id.0],
        )?
        .iter()
        .map(probe)
        .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    Ok(Some(OperationDetail {
        operation,
        attempts,
        events,
        decisions,
        retry_requests,
        probes,
        contract,
        // PostgreSQL's typed columns hold no malformed cell.
        history_malformed: Vec::new(),
    }))
}

fn time(r: &Row, i: usize) -> Result<String, postgres::Error> {
    Ok(format_time(r.try_get::<_, DateTime<Utc>>(i)?))
}

fn opt_time(r: &Row, i: usize) -> Result<Option<String>, postgres::Error> {
    Ok(r.try_get::<_, Option<DateTime<Utc>>>(i)?.map(format_time))
}

fn operation(r: &Row) -> Result<Operation, postgres::Error> {
    Ok(Operation {
        id: OperationId(r.try_get(0)?),
        account: r.try_get(1)?,
        op_type: r.try_get(2)?,
        idem_key: r.try_get(3)?,
        fingerprint: r.try_get(4)?,
        params: r.try_get(5)?,
        state: State::parse(r.try_get(6)?),
        result_id: r.try_get(7)?,
        max_attempts: r.try_get(8)?,
        deadline_at: opt_time(r, 9)?,
        lease_expires_at: opt_time(r, 10)?,
        key_expires_at: opt_time(r, 11)?,
        created_at: time(r, 12)?,
        updated_at: time(r, 13)?,
        version: r.try_get(14)?,
        malformed: Vec::new(),
    })
}

fn attempt(r: &Row) -> Result<Attempt, postgres::Error> {
    Ok(Attempt {
        op_id: OperationId(r.try_get(0)?),
        attempt: r.try_get(1)?,
        started_at: time(r, 2)?,
        ended_at: opt_time(r, 3)?,
        outcome: Outcome::parse(r.try_get(4)?),
        error: r.try_get(5)?,
        response: r.try_get(6)?,
    })
}

fn event(r: &Row) -> Result<Event, postgres::Error> {
    Ok(Event {
        id: r.try_get(0)?,
        op_id: OperationId(r.try_get(1)?),
        attempt: r.try_get(2)?,
        at: time(r, 3)?,
        event: r.try_get(4)?,
        detail: r.try_get(5)?,
    })
}

fn decision(r: &Row) -> Result<Decision, postgres::Error> {
    Ok(Decision {
        id: DecisionId(r.try_get(0)?),
        op_id: OperationId(r.try_get(1)?),
        decision: r.try_get(2)?,
        from_state: r.try_get(3)?,
        to_state: r.try_get(4)?,
        result_id: r.try_get(5)?,
        evidence: r.try_get(6)?,
        note: r.try_get(7)?,
        operator: r.try_get(8)?,
        decided_at: time(r, 9)?,
        op_version: r.try_get(10)?,
        undoes: r.try_get::<_, Option<i64>>(11)?.map(DecisionId),
    })
}

fn retry_request(r: &Row) -> Result<RetryRequest, postgres::Error> {
    Ok(RetryRequest {
        id: r.try_get(0)?,
        op_id: OperationId(r.try_get(1)?),
        idem_key: r.try_get(2)?,
        requested_at: time(r, 3)?,
        requested_by: r.try_get(4)?,
        status: r.try_get(5)?,
        decision_id: DecisionId(r.try_get(6)?),
        progress: RetryProgress {
            claimed_by: r.try_get(7)?,
            claim_expires_at: opt_time(r, 8)?,
            runs: r.try_get(9)?,
            finished_at: opt_time(r, 10)?,
            outcome: r.try_get(11)?,
        },
    })
}

fn probe(r: &Row) -> Result<Probe, postgres::Error> {
    Ok(Probe {
        id: r.try_get(0)?,
        probe: NewProbe {
            op_id: OperationId(r.try_get(1)?),
            idem_key: r.try_get(2)?,
            command: r.try_get(3)?,
            outcome: ProbeOutcome::parse(r.try_get(4)?),
            result_id: r.try_get(5)?,
            exit: r.try_get(6)?,
            output: r.try_get(7)?,
            operator: r.try_get(8)?,
            probed_at: time(r, 9)?,
            duration_ms: r.try_get(10)?,
        },
    })
}

fn contract(r: &Row) -> Result<OpTypeContract, postgres::Error> {
    Ok(OpTypeContract {
        op_type: r.try_get(0)?,
        idempotent: r.try_get(1)?,
        key_retention_s: r.try_get(2)?,
        description: r.try_get(3)?,
    })
}
