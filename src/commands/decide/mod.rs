//! `settle decide`: records one decision through the store (atomic, audited,
//! version-guarded) under the operator [`crate::cli::config`] resolved, and says
//! what was written. Refuses with a usage error when no operator is known.
//! With `--filter` it hands over to [`bulk`], or to [`group`] when the
//! ledger names a group.

use chrono::{DateTime, Utc};

mod bulk;
mod flags;
mod group;

use super::ledger_arg::open_for_writing;
use super::output::emit;
use crate::cli::DecideArgs;
use crate::cli::config::Config;
use crate::cli::ledger_set::Member;
use crate::domain::{DecisionDraft, DecisionId, DecisionKind};
use crate::error::{Error, Result};
use flags::{draft, kind};

pub fn run(args: &DecideArgs, config: &Config, now: DateTime<Utc>) -> Result<()> {
    let operator = config
        .operator
        .clone()
        .map_err(|why| Error::Usage(format!("who is deciding? {why}")))?;
    let kind = kind(args);
    let (Some(op), None) = (&args.op, &args.filter) else {
        if args.set.is_several() {
            return group::run(args, kind, config.receivers.as_deref(), operator, now);
        }
        let receivers = config.receivers.as_deref();
        return bulk::run(args, kind, receivers, operator, now);
    };
    let wait = std::time::Duration::from_secs(args.wait);
    let open = |m: &Member| {
        m.writable()
            .and_then(|()| open_for_writing(&m.address, wait))
    };
    let found = super::ledger_arg::locate(&args.set, op, open)?;
    let receivers = args.receivers.receivers.as_deref();
    let receivers = receivers.or(found.member.receivers.as_deref());
    let (mut ledger, id) = (found.ledger, found.id);
    super::ledger_arg::declare(&mut ledger, receivers.or(config.receivers.as_deref()))?;
    let expected_version = match args.expect_version {
        Some(v) => v,
        None => ledger.detail(id)?.operation.version,
    };
    let draft = DecisionDraft {
        expected_version,
        undoes: args.reopen.map(DecisionId),
        ..draft(args, kind, id, operator)
    };
    let receipt = ledger.record_decision(&draft, now)?;
    let mut line = format!(
        "recorded decision {}: operation {} {} -> {} (version {})",
        receipt.decision_id,
        receipt.op_id,
        receipt.from_state,
        receipt.to_state,
        receipt.new_version
    );
    if let Some(r) = receipt.retry_request_id {
        line.push_str(&format!(
            "; retry request {r} {}",
            if kind == DecisionKind::CancelRetry {
                "cancelled"
            } else {
                "queued"
            }
        ));
    }
    if receipt.extra_attempt {
        line.push_str("; spends one attempt beyond the budget");
    }
    emit(|out| writeln!(out, "{line}"))
}
