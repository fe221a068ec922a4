//! `settle receiver`: the reference receiver's commands. `lookup` and
//! `retry` read the operation from the `SETTLE_*` variables the probe and
//! the worker set, answer from the receiver's own database
//! ([`crate::store::receiver`]) and say it the way the receivers contract
//! asks: the result id on stdout, or an exit status. It never opens a
//! ledger.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::cli::ReceiverCommand;
use crate::error::{Error, Result};
use crate::store::receiver::{KeyRequest, LookupAnswer, ReceiverDb, RetryAnswer};

/// The contract's "no": no record of the key, or refused as a conflict.
const EXIT_NO: i32 = crate::receivers::EXIT_NO;
/// The receiver cannot tell (any status but 0 and 3 reads as unknown).
const EXIT_CANNOT_TELL: i32 = 4;

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
        } => {
            let req = from_environment()?;
            let retention = Duration::from_secs(retention.retention_s);
            let answer = ReceiverDb::open(&db, true)?.retry(&req, retention, now_s)?;
            std::thread::sleep(Duration::from_millis(reply_delay_ms));
            match answer {
                RetryAnswer::Done { result_id } | RetryAnswer::Replayed { result_id } => {
                    reply(&result_id)
                }
                RetryAnswer::Refused { why } => Err(answer_no(
                    EXIT_NO,
                    format!("refused: key {}: {why}", natural_key(&req)),
                )),
            }
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

/// The operation in `SETTLE_*`. Account, op type and key are required; an
/// empty fingerprint or params means "not sent" (nothing to compare).
fn from_environment() -> Result<KeyRequest> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let required = |name: &str| {
        var(name).ok_or_else(|| {
            Error::Usage(format!(
                "{name} is not set: settle's probe and worker run this with the operation in \
                 SETTLE_* variables (see the README's receivers section)"
            ))
        })
    };
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
