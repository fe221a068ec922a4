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

use std::path::Path;

use chrono::{DateTime, Utc};

use super::bulk::{
    Preview, Target, asked, check_count, dry_run_said, list_and_judge, open_and_count,
    write_batches,
};
use crate::cli::DecideArgs;
use crate::cli::ledger_set::Member;
use crate::commands::output::emit;
use crate::commands::several::unread;
use crate::domain::{DecisionDraft, DecisionKind};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;
use crate::text::sanitize;

/// One ledger opened and counted.
struct Counted<'m> {
    member: &'m Member,
    ledger: Ledger,
    count: usize,
}

/// One ledger's share of the decision, as listed and judged.
struct Part<'m> {
    member: &'m Member,
    ledger: Ledger,
    targets: Vec<Target>,
    preview: Preview,
}

pub(super) fn run(
    args: &DecideArgs,
    kind: DecisionKind,
    receivers: Option<&Path>,
    operator: String,
    now: DateTime<Utc>,
) -> Result<()> {
    let (query, template, shown) = asked(args, kind, operator)?;
    let counted = count_each(args, receivers, &query, now)?;
    let query = query.without_ledgers();
    if !args.dry_run {
        let total = counted.iter().map(|c| c.count).sum();
        let each = counts(counted.iter().map(|c| (c.member, c.count)));
        check_count(args.expect_count, total, &shown, Some(&each))?;
    }
    let mut parts = Vec::with_capacity(counted.len());
    for Counted { member, ledger, .. } in counted {
        let (targets, preview) = list_and_judge(&ledger, &query, &template, now)
            .map_err(|e| Error::in_ledger(&member.name, e))?;
        eprintln!("settle: in {}:", sanitize(&member.name));
        eprint!("{}", preview.render(kind, &shown));
        if let Some(why) = refusal(args, member) {
            eprintln!("  {why}");
        }
        parts.push(Part {
            member,
            ledger,
            targets,
            preview,
        });
    }
    let listed = parts.iter().map(|p| p.targets.len()).sum();
    let each = counts(parts.iter().map(|p| (p.member, p.targets.len())));
    if args.dry_run {
        let pass = parts.iter().map(|p| p.preview.pass).sum();
        let where_ = format!(" in {} ledgers ({each})", parts.len());
        return dry_run_said(args.expect_count, listed, pass, &where_);
    }
    // What gets written is the listing: a queue that moved since the
    // count is no longer what the operator's number described.
    check_count(args.expect_count, listed, &shown, Some(&each))?;
    write_parts(&template, &mut parts, now)
}

/// Opens each ledger (for writing unless it is named read-only or this is
/// a dry run) and counts its matching queue rows; any one that cannot be
/// opened or counted refuses the whole decision, naming it.
fn count_each<'m>(
    args: &'m DecideArgs,
    receivers: Option<&Path>,
    query: &Query,
    now: DateTime<Utc>,
) -> Result<Vec<Counted<'m>>> {
    let mut counted = Vec::new();
    let mut failed = Vec::new();
    // `ledger:NAME` picks ledgers of the group; each is asked the rest.
    let (picked, query) = (args.set.picked(query), query.without_ledgers());
    for member in args
        .set
        .members
        .iter()
        .filter(|m| picked.members.contains(m))
    {
        let writing = !args.dry_run && member.writes_refused.is_none();
        let receivers = member.receivers.as_deref().or(receivers);
        match open_and_count(args, &member.address, writing, receivers, &query, now) {
            Ok((ledger, count)) => counted.push(Counted {
                member,
                ledger,
                count,
            }),
            Err(e) => unread(member, &e, &mut failed),
        }
    }
    if failed.is_empty() {
        return Ok(counted);
    }
    let failed: Vec<_> = failed.iter().map(|name| sanitize(name)).collect();
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
fn counts<'m>(each: impl Iterator<Item = (&'m Member, usize)>) -> String {
    let each: Vec<String> = each
        .map(|(member, n)| format!("{} {n}", sanitize(&member.name)))
        .collect();
    each.join(", ")
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
