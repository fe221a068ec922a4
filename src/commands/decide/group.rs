//! `settle decide @GROUP --filter Q --expect-count N`: one decision for the
//! matching queue rows of every ledger of a group (one incident, several
//! services). Each ledger is counted first and the operator's number is
//! checked against the total, the count of each said beside it; any
//! ledger that cannot be counted stops it all before anything is written,
//! since the number would not describe what is there. Then each ledger's
//! part is written in its own batches, with its own rules and audit
//! trail, and is written or refused on its own: a ledger named read-only
//! or one that fails mid-way leaves the others' parts written, and the
//! summary says which ledger did what.

use chrono::{DateTime, Utc};

use super::bulk::{Preview, Target, asked, check_count, list_and_judge, write_batches};
use crate::cli::DecideArgs;
use crate::cli::ledger_set::Member;
use crate::commands::ledger_arg::{declare, open_for_reading, open_for_writing};
use crate::commands::output::emit;
use crate::domain::{DecisionDraft, DecisionKind};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;
use crate::text::sanitize;

/// One ledger's share of the decision.
struct Part<'m> {
    member: &'m Member,
    ledger: Ledger,
    count: usize,
    targets: Vec<Target>,
    preview: Preview,
}

pub(super) fn run(
    args: &DecideArgs,
    kind: DecisionKind,
    receivers: Option<&std::path::Path>,
    operator: String,
    now: DateTime<Utc>,
) -> Result<()> {
    let (query, template, shown) = asked(args, kind, operator)?;
    let mut parts = open_and_count(args, receivers, &query, now)?;
    let total: usize = parts.iter().map(|p| p.count).sum();
    if !args.dry_run {
        check_count(args.expect_count, total, &shown)
            .map_err(|e| each_count(e, &parts, |p| p.count))?;
    }
    for part in &mut parts {
        let (targets, preview) = list_and_judge(&part.ledger, &query, &template, now)
            .map_err(|e| in_ledger(part.member, e))?;
        eprintln!("settle: in {}:", sanitize(&part.member.name));
        eprint!("{}", preview.render(kind, &shown));
        if let Some(why) = refusal(args, part.member) {
            eprintln!("  {why}");
        }
        (part.targets, part.preview) = (targets, preview);
    }
    let listed: usize = parts.iter().map(|p| p.targets.len()).sum();
    if args.dry_run {
        if let Some(n) = args.expect_count.filter(|n| *n != listed) {
            eprintln!("settle: --expect-count {n} would be refused: {listed} rows match");
        }
        let pass: usize = parts.iter().map(|p| p.preview.pass).sum();
        return emit(|out| {
            writeln!(
                out,
                "dry run: {listed} rows match in {} ledgers ({}); {pass} would be written, {} skipped (refused or changed); nothing written",
                parts.len(),
                counts(&parts, |p| p.targets.len()),
                listed - pass
            )
        });
    }
    // What gets written is the listing: a queue that moved since the
    // count is no longer what the operator's number described.
    check_count(args.expect_count, listed, &shown)
        .map_err(|e| each_count(e, &parts, |p| p.targets.len()))?;
    write_parts(&template, &mut parts, now)
}

/// Opens each ledger (for writing unless it is named read-only or this is
/// a dry run) and counts its matching queue rows; any one that cannot be
/// opened or counted refuses the whole decision, naming it.
fn open_and_count<'m>(
    args: &'m DecideArgs,
    receivers: Option<&std::path::Path>,
    query: &Query,
    now: DateTime<Utc>,
) -> Result<Vec<Part<'m>>> {
    let wait = std::time::Duration::from_secs(args.wait);
    let mut parts = Vec::new();
    let mut failed = Vec::new();
    for member in &args.set.members {
        let opened = if args.dry_run || member.writes_refused.is_some() {
            open_for_reading(&member.address)
        } else {
            open_for_writing(&member.address, wait)
        };
        let counted = opened.and_then(|mut ledger| {
            declare(&mut ledger, member.receivers.as_deref().or(receivers))?;
            let count = ledger.count(query, now)?;
            Ok((ledger, usize::try_from(count).unwrap_or(usize::MAX)))
        });
        match counted {
            Ok((ledger, count)) => parts.push(Part {
                member,
                ledger,
                count,
                targets: Vec::new(),
                preview: Preview::default(),
            }),
            Err(e) => {
                eprintln!("settle: {}: {e}", sanitize(&member.name));
                failed.push(sanitize(&member.name).into_owned());
            }
        }
    }
    if failed.is_empty() {
        return Ok(parts);
    }
    Err(Error::Usage(format!(
        "{} of {} ledgers could not be counted: {} (each says why above), so no count describes \
         the group; nothing written in any ledger\n  what to do: decide when it answers again, \
         or name the other ledgers alone (settle decide @A --filter ...)",
        failed.len(),
        args.set.members.len(),
        failed.join(", ")
    )))
}

/// "billing 12, shipping 3".
fn counts(parts: &[Part<'_>], n: impl Fn(&Part<'_>) -> usize) -> String {
    let each: Vec<String> = parts
        .iter()
        .map(|p| format!("{} {}", sanitize(&p.member.name), n(p)))
        .collect();
    each.join(", ")
}

/// A count refusal with each ledger's count beside the total.
fn each_count(e: Error, parts: &[Part<'_>], n: impl Fn(&Part<'_>) -> usize) -> Error {
    match e {
        Error::Usage(text) => Error::Usage(match text.split_once('\n') {
            Some((first, rest)) => {
                format!("{first}\n  in each ledger: {}\n{rest}", counts(parts, n))
            }
            None => text,
        }),
        other => other,
    }
}

fn in_ledger(member: &Member, e: Error) -> Error {
    Error::InLedger {
        name: member.name.clone(),
        source: Box::new(e),
    }
}

/// Why this ledger's part will not be written, said before any write.
fn refusal(args: &DecideArgs, member: &Member) -> Option<String> {
    match (&member.writes_refused, args.dry_run) {
        (Some(why), false) => Some(format!(
            "refused here: {why}; nothing of it will be written"
        )),
        (Some(why), true) => Some(format!("would be refused here: {why}")),
        (None, _) => None,
    }
}

/// Each ledger's part on its own: one that is refused or fails leaves the
/// others written. Then the whole, and an error unless every listed row
/// was written.
fn write_parts(template: &DecisionDraft, parts: &mut [Part<'_>], now: DateTime<Utc>) -> Result<()> {
    let (mut matched, mut written, mut refused, mut conflicted) = (0, 0, 0, 0);
    let mut failed = Vec::new();
    for part in parts.iter_mut() {
        let n = part.targets.len();
        matched += n;
        let name = sanitize(&part.member.name).into_owned();
        if n == 0 {
            emit(|out| writeln!(out, "{name}: nothing matches"))?;
            continue;
        }
        if let Some(why) = &part.member.writes_refused {
            emit(|out| writeln!(out, "{name}: {n} refused: {why}"))?;
            refused += n;
            continue;
        }
        let label = format!("{name}: ");
        match write_batches(&mut part.ledger, template, &part.targets, now, &label) {
            Ok(()) => written += n,
            Err(Error::BulkIncomplete {
                written: w,
                refused: r,
                conflicted: c,
                ..
            }) => {
                (written, refused, conflicted) = (written + w, refused + r, conflicted + c);
            }
            Err(e) => {
                // The summary above said what of it was written.
                eprintln!("settle: {name}: {e}");
                failed.push(name);
            }
        }
    }
    emit(|out| {
        writeln!(
            out,
            "in all: written {written}, refused {refused}, conflicted {conflicted} (of {matched} listed in {} ledgers){}",
            parts.len(),
            match failed.is_empty() {
                true => String::new(),
                false => format!("; failed part-way: {}", failed.join(", ")),
            }
        )
    })?;
    if written == matched {
        return Ok(());
    }
    Err(Error::BulkIncomplete {
        matched,
        written,
        refused,
        conflicted,
    })
}
