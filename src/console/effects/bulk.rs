//! Performing a console bulk decision, the console's `settle decide
//! --filter`: judging every
//! row a query matches (streamed, keeping only ids and versions) and
//! writing the passing ones in batches through
//! [`Ledger::record_decisions`], each guarded by the version the preview
//! saw. Blocking calls over owned values; never sees the `App`.

use chrono::{DateTime, Utc};

use crate::app::Msg;
use crate::app::bulk::{BulkPreview, BulkWrite, RefusalGroup, SAMPLE, Target};
use crate::domain::DecisionDraft;
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::Ledger;

/// Rows per transaction, as the CLI's: a service waiting for the write
/// lock waits for one batch, not the whole incident.
pub const BATCH: usize = 200;

fn draft_for(template: &DecisionDraft, target: &Target) -> DecisionDraft {
    DecisionDraft {
        op_id: target.id,
        expected_version: target.version,
        ..template.clone()
    }
}

/// Streams the rows `query` matches once, judging `template` on each.
pub fn preview(
    ledger: &Ledger,
    query: &Query,
    template: DecisionDraft,
    now: DateTime<Utc>,
) -> Result<BulkPreview> {
    let mut p = BulkPreview {
        template,
        pass: Vec::new(),
        refused: Vec::new(),
        changed: Vec::new(),
        sample: Vec::new(),
        matched: 0,
        per_ledger: Vec::new(),
    };
    ledger.for_each_row(query, now, |row| {
        let target = Target {
            id: row.id,
            version: row.version,
            ledger: row.origin.as_ref().map(|o| o.ledger.clone()),
        };
        p.matched += 1;
        // Raw ledger text: the form sanitises what it draws, once.
        if p.sample.len() < SAMPLE {
            let id = row
                .origin
                .as_ref()
                .map_or(row.id.to_string(), ToString::to_string);
            p.sample.push(format!(
                "#{id} {} {}/{} version {}",
                row.state, row.account, row.op_type, row.version
            ));
        }
        match ledger.judge_decision(&draft_for(&p.template, &target), now) {
            Ok(()) => {
                if let Some(name) = &target.ledger {
                    match p.per_ledger.iter_mut().find(|(n, _)| n == name) {
                        Some((_, count)) => *count += 1,
                        None => p.per_ledger.push((name.clone(), 1)),
                    }
                }
                p.pass.push(target);
            }
            Err(Error::Refused { rule, reason, .. }) => {
                let rule = rule.label().to_string();
                match p.refused.iter_mut().find(|g| g.rule == rule) {
                    Some(g) => g.ids.push(target.id),
                    None => p.refused.push(RefusalGroup {
                        rule,
                        ids: vec![target.id],
                        reason,
                    }),
                }
            }
            Err(Error::VersionConflict { .. } | Error::NotFound { .. }) => {
                p.changed.push(target.id);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    })?;
    // The biggest group first: it is the one the operator must read.
    p.refused.sort_by_key(|g| std::cmp::Reverse(g.ids.len()));
    Ok(p)
}

/// What came of one row of a batch, counted in all and, in a group, in
/// its ledger's part. A group says a ledger whose part could not be
/// written at all under that ledger's name ([`Error::InLedger`]).
fn count(write: &mut BulkWrite, target: &Target, outcome: Result<()>) {
    let mut part = target.ledger.as_deref().map(|name| write.part(name));
    let mut tally = |n: fn(&mut crate::app::bulk::LedgerPart) -> &mut usize| {
        if let Some(p) = part.as_deref_mut() {
            *n(p) += 1;
        }
    };
    match outcome {
        Ok(()) => {
            tally(|p| &mut p.written);
            write.written += 1;
        }
        Err(Error::Refused { .. }) => {
            tally(|p| &mut p.refused);
            write.refused.push(target.id);
        }
        Err(e @ Error::InLedger { .. }) => {
            if let Some(p) = part {
                p.failed.get_or_insert_with(|| super::line::first_line(&e));
            }
            write.unwritten.push(target.id);
        }
        Err(_) => {
            tally(|p| &mut p.conflicted);
            write.conflicted.push(target.id);
        }
    }
}

/// Writes `template` on every target in batches of [`BATCH`], telling
/// `report` a [`Msg::BulkProgress`] after each (the last `finished`). A
/// busy ledger or a failing one stops it; what was committed stays.
/// `report` returning false (nobody listens) stops it too.
pub fn record_bulk(
    ledger: &mut Ledger,
    now: DateTime<Utc>,
    template: &DecisionDraft,
    targets: &[Target],
    mut report: impl FnMut(Msg) -> bool,
) {
    let mut write = BulkWrite {
        total: targets.len(),
        ..BulkWrite::default()
    };
    for batch in targets.chunks(BATCH) {
        let drafts: Vec<DecisionDraft> = batch.iter().map(|t| draft_for(template, t)).collect();
        match ledger.record_decisions(&drafts, now) {
            Ok(outcomes) => {
                for (target, outcome) in batch.iter().zip(outcomes) {
                    count(&mut write, target, outcome.map(|_| ()));
                }
                write.done += batch.len();
            }
            Err(e) => {
                write.failed = Some(super::line::first_line(&e));
                break;
            }
        }
        if write.done < write.total && !report(Msg::BulkProgress(write.clone())) {
            return;
        }
    }
    write.finished = true;
    report(Msg::BulkProgress(write));
}
