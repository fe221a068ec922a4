//! `settle receiver`: the reference receiver's commands. `lookup`, `retry`
//! and `effects` read the operation from the `SETTLE_*` variables the probe,
//! the worker and the drill set (the retry also `SETTLE_DRILL_FAULT`), answer from the receiver's own database
//! ([`crate::reference_receiver::db`]) and say it the way the receivers contract
//! asks: the result id on stdout, or an exit status. It never opens a
//! ledger.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::cli::ReceiverCommand;
use crate::error::{Error, Result};
use crate::reference_receiver::args::Flaw;
use crate::reference_receiver::db::{Behaviour, KeyRequest, LookupAnswer, ReceiverDb, RetryAnswer};

/// The contract's "no": no record of the key, or refused as a conflict.
const EXIT_NO: i32 = crate::receivers::EXIT_NO;
/// The receiver cannot tell (any status but 0 and 3 reads as unknown).
const EXIT_CANNOT_TELL: i32 = 4;
/// A fault a drill injected (`SETTLE_DRILL_FAULT`): neither 0 nor 3, so
/// the caller learns nothing from it.
const EXIT_FAULT: i32 = 5;

pub fn run(command: ReceiverCommand, now: DateTime<Utc>) -> Result<()> {
    let now_s = now.timestamp();
    match command {
        ReceiverCommand::Lookup { db } => {
            let req = from_environment()?;
            let answer = ReceiverDb::open(&db, false)?.lookup(&req, now_s)?;
            let name = natural_key(&req);
            match answer {
                LookupAnswer::Found { result_id } => reply(&result_id),
                LookupAnswer::NotFound => {
                    Err(answer_no(EXIT_NO, format!("no record of key {name}")))
                }
                LookupAnswer::Forgotten { until } => Err(answer_no(
                    EXIT_CANNOT_TELL,
                    format!(
                        "key {name} was forgotten at {}; its effect may exist",
                        DateTime::from_timestamp(until, 0)
                            .map(|t| t.to_rfc3339())
                            .unwrap_or_else(|| until.to_string())
                    ),
                )),
                LookupAnswer::Mismatch { why } => Err(answer_no(
                    EXIT_CANNOT_TELL,
                    format!("key {name} was used for another request: {why}"),
                )),
            }
        }
        ReceiverCommand::Retry {
            db,
            retention,
            reply_delay_ms,
            flaw,
        } => retry(&db, retention.retention_s, reply_delay_ms, flaw, now_s),
        ReceiverCommand::Effects { db } => {
            let account = std::env::var("SETTLE_ACCOUNT")
                .ok()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| Error::Usage(not_set("SETTLE_ACCOUNT")))?;
            let ids = ReceiverDb::open(&db, false)?.effects(&account)?;
            for id in ids {
                println!("{id}");
            }
            Ok(())
        }
        ReceiverCommand::Record {
            db,
            account,
            op_type,
            key,
            result_id,
            fingerprint,
            params,
            retention,
        } => {
            let req = KeyRequest {
                account,
                op_type,
                key,
                fingerprint,
                params,
                attempt: None,
            };
            let retention = Duration::from_secs(retention.retention_s);
            ReceiverDb::open(&db, true)?.record(&req, &result_id, retention, now_s)
        }
    }
}

/// `settle receiver retry`: the contract's retry, with the drill's fault
/// and, for tests, a flaw.
fn retry(
    db: &std::path::Path,
    retention_s: u64,
    reply_delay_ms: u64,
    flaw: Option<Flaw>,
    now_s: i64,
) -> Result<()> {
    let req = from_environment()?;
    let fault = Fault::from_environment()?;
    let mut receiver = ReceiverDb::open(db, true)?;
    if fault == Fault::BeforeEffect {
        return Err(answer_no(
            EXIT_FAULT,
            "fault injected before the effect".into(),
        ));
    }
    let how = behaviour(retention_s, flaw, &fault);
    let answer = receiver.retry_as(&req, &how, now_s)?;
    std::thread::sleep(Duration::from_millis(reply_delay_ms));
    if fault == Fault::AfterEffect {
        return Err(answer_no(
            EXIT_FAULT,
            "fault injected after the effect: the response is lost".into(),
        ));
    }
    match answer {
        RetryAnswer::Done { result_id } | RetryAnswer::Replayed { result_id } => reply(&result_id),
        RetryAnswer::Refused { why } => Err(answer_no(
            EXIT_NO,
            format!("refused: key {}: {why}", natural_key(&req)),
        )),
    }
}

/// The operation in `SETTLE_*`. Account, op type and key are required; an
/// empty fingerprint or params means "not sent" (nothing to compare).
fn from_environment() -> Result<KeyRequest> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let required = |name: &str| var(name).ok_or_else(|| Error::Usage(not_set(name)));
    let attempt = match var("SETTLE_ATTEMPT") {
        None => None,
        Some(n) => Some(
            n.parse::<i64>()
                .map_err(|_| Error::Usage(format!("SETTLE_ATTEMPT is {n:?}, not a number")))?,
        ),
    };
    Ok(KeyRequest {
        account: required("SETTLE_ACCOUNT")?,
        op_type: required("SETTLE_OP_TYPE")?,
        key: required("SETTLE_KEY")?,
        fingerprint: var("SETTLE_FINGERPRINT"),
        params: var("SETTLE_PARAMS"),
        attempt,
    })
}

fn not_set(name: &str) -> String {
    format!(
        "{name} is not set: settle's probe, worker and drill run this with the operation in \
         SETTLE_* variables (see the README's receivers section)"
    )
}

/// A fault a drill asks the retry for (`SETTLE_DRILL_FAULT`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
    None,
    /// Exit non-zero having changed nothing.
    BeforeEffect,
    /// Commit the effect and its key, then exit non-zero without the id.
    AfterEffect,
    /// Wait this long, write lock held, before committing.
    Delay(Duration),
}

impl Fault {
    fn from_environment() -> Result<Fault> {
        let Some(word) = std::env::var("SETTLE_DRILL_FAULT")
            .ok()
            .filter(|v| !v.is_empty())
        else {
            return Ok(Fault::None);
        };
        match word.as_str() {
            "before_effect" => Ok(Fault::BeforeEffect),
            "after_effect" => Ok(Fault::AfterEffect),
            other => other
                .strip_prefix("delay_ms=")
                .and_then(|n| n.parse::<u64>().ok())
                .map(|ms| Fault::Delay(Duration::from_millis(ms)))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "SETTLE_DRILL_FAULT is {:?}: expected before_effect, after_effect or \
                         delay_ms=N",
                        crate::text::sanitize(other)
                    ))
                }),
        }
    }
}

/// What the retry does beyond the contract: the fault's delay, and a flaw
/// the drill's tests ask for.
fn behaviour(retention_s: u64, flaw: Option<Flaw>, fault: &Fault) -> Behaviour {
    let retention_s = if flaw == Some(Flaw::ForgetEarly) {
        retention_s / 4
    } else {
        retention_s
    };
    Behaviour {
        retention: Duration::from_secs(retention_s),
        delay: match fault {
            Fault::Delay(d) => *d,
            _ => Duration::ZERO,
        },
        racy: flaw == Some(Flaw::Race),
        ignore_params: flaw == Some(Flaw::IgnoreParams),
    }
}

fn natural_key(req: &KeyRequest) -> String {
    crate::text::sanitize(&format!("{}/{}/{}", req.account, req.op_type, req.key)).into_owned()
}

/// The contract's "yes": the result id alone on stdout.
fn reply(result_id: &str) -> Result<()> {
    println!("{result_id}");
    Ok(())
}

fn answer_no(code: i32, message: String) -> Error {
    Error::ReceiverAnswer { code, message }
}
