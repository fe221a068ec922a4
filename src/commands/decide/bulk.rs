//! `settle decide LEDGER --filter Q ... --expect-count N`: one decision for
//! every row of the triage queue a filter matches, for an incident that left
//! hundreds of operations with one answer. It counts first and refuses a
//! count other than the one the operator typed, judges every row and says
//! what would be refused (grouped) before writing, then writes in batches
//! through [`crate::store::Ledger::record_decisions`], each row guarded by
//! the version it had when listed. It holds only ids and versions, never the
//! rows' details, and speaks no SQL.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::cli::DecideArgs;
use crate::commands::output::emit;
use crate::commands::progress::Steps;
use crate::domain::{DecisionDraft, DecisionKind, OperationId, OperationRow};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;
use crate::text::sanitize;

/// Rows per transaction: small enough that a console or service waiting for
/// the write lock waits for one batch, not the whole incident.
const BATCH: usize = 200;
/// Rows shown as a sample in the preview, and ids per refusal group.
const SAMPLE: usize = 5;
/// Ids listed per kind in the summary before "and N more".
const LISTED: usize = 20;

pub fn run(
    args: &DecideArgs,
    kind: DecisionKind,
    receivers: Option<&Path>,
    operator: String,
    now: DateTime<Utc>,
) -> Result<()> {
    let (query, template, shown) = asked(args, kind, operator)?;
    let (mut ledger, count) =
        open_and_count(args, &args.ledger, !args.dry_run, receivers, &query, now)?;
    if !args.dry_run {
        check_count(args.expect_count, count, &shown, None)?;
    }
    let (targets, preview) = list_and_judge(&ledger, &query, &template, now)?;
    eprint!("{}", preview.render(kind, &shown));
    if args.dry_run {
        return dry_run_said(args.expect_count, targets.len(), preview.pass, "");
    }
    // The list is what gets written: if the queue moved between the count
    // and the listing, the operator's number no longer describes it.
    check_count(args.expect_count, targets.len(), &shown, None)?;
    write_batches(&mut ledger, &template, &targets, now, "")
}

/// What the flags ask for: the filter's query over the queue, the
/// decision each row gets, and the filter as the messages show it.
pub(super) fn asked(
    args: &DecideArgs,
    kind: DecisionKind,
    operator: String,
) -> Result<(Query, DecisionDraft, String)> {
    let filter = args.filter.as_deref().unwrap_or_default();
    // Only the queue: a bulk decision is for what needs a person, and a
    // filter that also matched completed rows must not reach them.
    let query = Query::parse(filter)?.and(Query::queue());
    // Each row gets its own id and the version listed before writing.
    let template = super::flags::draft(args, kind, OperationId(0), operator);
    Ok((query, template, sanitize(filter).into_owned()))
}

/// Opens the ledger at `address` (for writing, or for reading only), and
/// counts its queue rows `query` matches.
pub(super) fn open_and_count(
    args: &DecideArgs,
    address: &Path,
    writing: bool,
    receivers: Option<&Path>,
    query: &Query,
    now: DateTime<Utc>,
) -> Result<(Ledger, usize)> {
    let mut ledger = if writing {
        let wait = std::time::Duration::from_secs(args.wait);
        crate::commands::ledger_arg::open_for_writing(address, wait)?
    } else {
        crate::commands::ledger_arg::open_for_reading(address)?
    };
    crate::commands::ledger_arg::declare(&mut ledger, receivers)?;
    let count = usize::try_from(ledger.count(query, now)?).unwrap_or(usize::MAX);
    Ok((ledger, count))
}

/// Refuses unless the operator typed the count the filter matches; `each`
/// is each ledger's count, for a group ("pay 12, ship 3").
pub(super) fn check_count(
    expected: Option<usize>,
    count: usize,
    filter: &str,
    each: Option<&str>,
) -> Result<()> {
    let each = each.map_or(String::new(), |e| format!("\n  in each ledger: {e}"));
    match expected {
        Some(n) if n == count => Ok(()),
        Some(n) => Err(Error::Usage(format!(
            "--expect-count {n}, but {count} rows of the triage queue match `{filter}`; \
             nothing written{each}\n  what to do: check with --dry-run, then pass --expect-count {count}"
        ))),
        None => Err(Error::Usage(format!(
            "{count} rows of the triage queue match `{filter}`; nothing written{each}\n  \
             what to do: check with --dry-run, then pass --expect-count {count} to decide them all"
        ))),
    }
}

/// A dry run's last words: what the operator's count would meet, and what
/// would be written; `where_` says in which ledgers, for a group.
pub(super) fn dry_run_said(
    expected: Option<usize>,
    listed: usize,
    pass: usize,
    where_: &str,
) -> Result<()> {
    if let Some(n) = expected.filter(|n| *n != listed) {
        eprintln!("settle: --expect-count {n} would be refused: {listed} rows match");
    }
    emit(|out| {
        writeln!(
            out,
            "dry run: {listed} rows match{where_}; {pass} would be written, {} skipped (refused or changed); nothing written",
            listed - pass
        )
    })
}

/// One row as the listing saw it: what the write is guarded by.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target {
    id: OperationId,
    version: i64,
}

fn draft_for(template: &DecisionDraft, target: Target) -> DecisionDraft {
    DecisionDraft {
        op_id: target.id,
        expected_version: target.version,
        ..template.clone()
    }
}

/// Streams the matching rows once: keeps each id and version, judges the
/// rules on each, and keeps a few rows as a sample.
pub(super) fn list_and_judge(
    ledger: &Ledger,
    query: &Query,
    template: &DecisionDraft,
    now: DateTime<Utc>,
) -> Result<(Vec<Target>, Preview)> {
    let mut targets = Vec::new();
    let mut preview = Preview::default();
    ledger.for_each_row(query, now, |row| {
        let target = Target {
            id: row.id,
            version: row.version,
        };
        match ledger.judge_decision(&draft_for(template, target), now) {
            Ok(()) => preview.pass += 1,
            Err(e) => preview.skipped.add(target.id, e)?,
        }
        if preview.sample.len() < SAMPLE {
            preview.sample.push(sample_line(&row));
        }
        targets.push(target);
        Ok(())
    })?;
    Ok((targets, preview))
}

fn sample_line(row: &OperationRow) -> String {
    format!(
        "#{} {} {}/{}/{} (version {})",
        row.id,
        row.state,
        sanitize(&row.account),
        sanitize(&row.op_type),
        sanitize(&row.idem_key),
        row.version
    )
}

/// What the rules make of the listed rows, before anything is written.
#[derive(Debug, Default)]
pub(super) struct Preview {
    pub(super) pass: usize,
    skipped: Skipped,
    sample: Vec<String>,
}

impl Preview {
    pub(super) fn render(&self, kind: DecisionKind, filter: &str) -> String {
        let total = self.pass + self.skipped.refused_n + self.skipped.conflicted.len();
        let mut s = format!(
            "settle: {total} rows of the triage queue match `{filter}`; \
             {} pass every rule for {}\n",
            self.pass,
            kind.as_str()
        );
        s.push_str(&self.skipped.render("would be "));
        if !self.sample.is_empty() {
            s.push_str("  sample:\n");
            for line in &self.sample {
                s.push_str(&format!("    {line}\n"));
            }
        }
        s
    }
}

/// The rows kept out, refused ones grouped by rule and reason.
#[derive(Debug, Default)]
struct Skipped {
    /// Per rule: the ids it refused, and how often each reason was given
    /// (a reason may name a row's own values, so there can be many).
    refused: BTreeMap<&'static str, (Vec<OperationId>, BTreeMap<String, usize>)>,
    refused_n: usize,
    conflicted: Vec<OperationId>,
}

/// Reasons shown per rule before "and N more reasons".
const REASONS: usize = 3;

impl Skipped {
    /// Files a row's error under its kind; an error about the ledger rather
    /// than the row is handed back.
    fn add(&mut self, id: OperationId, e: Error) -> Result<()> {
        match e {
            Error::Refused { rule, reason, .. } => {
                let (ids, reasons) = self.refused.entry(rule.label()).or_default();
                ids.push(id);
                *reasons.entry(sanitize(&reason).into_owned()).or_default() += 1;
                self.refused_n += 1;
            }
            Error::VersionConflict { .. } | Error::NotFound { .. } => self.conflicted.push(id),
            other => return Err(other),
        }
        Ok(())
    }

    fn render(&self, verb: &str) -> String {
        let mut s = String::new();
        if self.refused_n > 0 {
            s.push_str(&format!("  {} {verb}refused:\n", self.refused_n));
            for (rule, (ids, reasons)) in &self.refused {
                s.push_str(&format!("    {} x {rule}: {}\n", ids.len(), id_list(ids)));
                for (reason, n) in reasons.iter().take(REASONS) {
                    s.push_str(&format!("      {n} x {reason}\n"));
                }
                if reasons.len() > REASONS {
                    s.push_str(&format!(
                        "      and {} more reasons\n",
                        reasons.len() - REASONS
                    ));
                }
            }
        }
        if !self.conflicted.is_empty() {
            s.push_str(&format!(
                "  {} changed since listed (skipped, not overwritten): {}\n",
                self.conflicted.len(),
                id_list(&self.conflicted)
            ));
        }
        s
    }
}

/// The first [`LISTED`] ids, then how many more.
fn id_list(ids: &[OperationId]) -> String {
    let mut s: Vec<String> = ids.iter().take(LISTED).map(|id| id.to_string()).collect();
    if ids.len() > LISTED {
        s.push(format!("and {} more", ids.len() - LISTED));
    }
    s.join(", ")
}

/// Writes the listed rows [`BATCH`] at a time, a progress line per batch on
/// stderr, and the summary on stdout after `label` (a group's ledger's
/// name and a colon, else nothing), also when a batch fails: the batches
/// before it are written and the summary says so.
pub(super) fn write_batches(
    ledger: &mut Ledger,
    template: &DecisionDraft,
    targets: &[Target],
    now: DateTime<Utc>,
    label: &str,
) -> Result<()> {
    let batches = targets.len().div_ceil(BATCH);
    let (mut written, mut skipped) = (0, Skipped::default());
    let steps = Steps::new("deciding", targets.len() as u64);
    for (i, chunk) in targets.chunks(BATCH).enumerate() {
        let drafts: Vec<DecisionDraft> = chunk.iter().map(|t| draft_for(template, *t)).collect();
        let outcomes = match ledger.record_decisions(&drafts, now) {
            Ok(o) => o,
            Err(e) => {
                summary(label, targets.len(), written, &skipped)?;
                eprintln!(
                    "settle: {label}batch {} of {batches} failed; nothing of it written",
                    i + 1
                );
                return Err(e);
            }
        };
        for (draft, outcome) in drafts.iter().zip(outcomes) {
            match outcome {
                Ok(_) => written += 1,
                Err(e) => skipped.add(draft.op_id, e)?,
            }
        }
        let done = i * BATCH + chunk.len();
        let tally = format!(
            "{written} written, {} refused, {} conflicted",
            skipped.refused_n,
            skipped.conflicted.len()
        );
        steps.at(done as u64, &tally, || {
            format!(
                "settle: batch {} of {batches}: {done} of {} rows done ({tally})",
                i + 1,
                targets.len(),
            )
        });
    }
    steps.finish();
    summary(label, targets.len(), written, &skipped)?;
    if skipped.refused_n + skipped.conflicted.len() == 0 {
        return Ok(());
    }
    Err(Error::BulkIncomplete {
        matched: targets.len(),
        written,
        refused: skipped.refused_n,
        conflicted: skipped.conflicted.len(),
    })
}

fn summary(label: &str, matched: usize, written: usize, skipped: &Skipped) -> Result<()> {
    let text = skipped.render("");
    emit(|out| {
        writeln!(
            out,
            "{label}written {written}, refused {}, conflicted {} (of {matched} listed)",
            skipped.refused_n,
            skipped.conflicted.len()
        )?;
        write!(out, "{text}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_id_list_names_twenty_then_says_how_many_more() {
        let ids: Vec<OperationId> = (1..=25).map(OperationId).collect();
        let listed = id_list(&ids);
        assert!(listed.starts_with("1, 2, 3"), "{listed}");
        assert!(listed.ends_with("19, 20, and 5 more"), "{listed}");
        assert_eq!(id_list(&ids[..3]), "1, 2, 3");
    }
}
