//! Synthetic ledgers for benchmarks and load tests: a deterministic stream of
//! realistic operations (mostly completed, about 1% needing a person), with
//! attempts and events, handed to [`crate::store::Ledger::import`] in
//! batches. Not used by the console itself.

use chrono::{DateTime, Duration, Utc};

use crate::domain::{
    NewAttempt, NewEvent, NewOperation, OpTypeContract, Outcome, State, format_time,
};

const ACCOUNTS: [&str; 8] = [
    "acme-corp",
    "globex",
    "initech",
    "umbrella",
    "wayne-ent",
    "stark-ind",
    "hooli",
    "tyrell",
];
const OP_TYPES: [&str; 4] = [
    "create_report",
    "place_order",
    "refund_payment",
    "send_invoice",
];

/// The contracts the synthetic operations refer to.
pub fn contracts() -> Vec<OpTypeContract> {
    OP_TYPES
        .iter()
        .map(|t| OpTypeContract {
            op_type: (*t).to_string(),
            idempotent: *t != "send_invoice",
            key_retention_s: Some(7 * 86_400),
            description: Some("synthetic".to_string()),
        })
        .collect()
}

/// Operation number `i` of a synthetic ledger ending at `now`. The same `i`
/// always yields the same operation, so batches can be made independently.
pub fn operation(i: u64, now: DateTime<Utc>) -> NewOperation {
    // A cheap integer hash: deterministic and spread out.
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    let created = now - Duration::seconds(((h % 2_592_000) as i64).max(60));
    let t = |s: i64| format_time(created + Duration::seconds(s));
    let state = match h % 1000 {
        0..=3 => State::Unknown,
        4..=5 => State::Exhausted,
        6 => State::Conflict,
        7 => State::Reserved,
        8 => State::NotApplied,
        _ => State::Completed,
    };
    let attempts_used = match state {
        State::Exhausted => 3,
        State::Completed => 1 + (h % 3) as i64 / 2,
        _ => 1,
    };
    let mut attempts = Vec::new();
    let mut events = vec![NewEvent {
        attempt: None,
        at: t(0),
        event: "reserved".to_string(),
        detail: None,
    }];
    for a in 1..=attempts_used {
        let last = a == attempts_used;
        let (outcome, error) = match state {
            State::Completed if last => (Outcome::Success, None),
            State::Conflict => (
                Outcome::Conflict,
                Some("key reused with different parameters".to_string()),
            ),
            State::Reserved => (Outcome::InFlight, None),
            State::NotApplied => (Outcome::Error, Some("card declined".to_string())),
            _ => (
                Outcome::Timeout,
                Some(format!("no reply within 30s (attempt {a})")),
            ),
        };
        events.push(NewEvent {
            attempt: Some(a),
            at: t(a * 31),
            event: match outcome {
                Outcome::Success => "success",
                Outcome::Conflict => "rejected_mismatch",
                Outcome::Error => "provider_error",
                _ => "timeout",
            }
            .to_string(),
            detail: None,
        });
        attempts.push(NewAttempt {
            attempt: a,
            started_at: t(a * 31 - 30),
            ended_at: (outcome != Outcome::InFlight).then(|| t(a * 31)),
            outcome,
            error,
            response: None,
        });
    }
    NewOperation {
        account: ACCOUNTS[(h >> 8) as usize % ACCOUNTS.len()].to_string(),
        op_type: OP_TYPES[(h >> 12) as usize % OP_TYPES.len()].to_string(),
        idem_key: format!("synth-{i:09}"),
        fingerprint: format!("sha256:{h:064x}"),
        params: Some(format!("{{\"seq\":{i}}}")),
        result_id: (state == State::Completed).then(|| format!("res-{i}")),
        lease_expires_at: (state == State::Reserved).then(|| t(600)),
        state,
        max_attempts: 3,
        deadline_at: None,
        key_expires_at: None,
        created_at: t(0),
        updated_at: t(attempts_used * 31),
        attempts,
        events,
    }
}

/// Creates a new ledger at `path` holding `n` synthetic operations, imported
/// in batches so memory stays flat.
pub fn write(path: &std::path::Path, n: u64) -> crate::Result<()> {
    let now = Utc::now();
    let mut ledger = crate::store::Ledger::create(path)?;
    ledger.import(&[], &contracts())?;
    const BATCH: u64 = 20_000;
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let batch: Vec<NewOperation> = (start..end).map(|i| operation(i, now)).collect();
        ledger.import(&batch, &[])?;
        start = end;
    }
    Ok(())
}
