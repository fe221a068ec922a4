//! Writing in a group: each decision goes to its row's own ledger, in
//! that ledger's own transaction, under its rules and audit chain; a
//! batch over rows of several ledgers is each ledger's part written on
//! its own, so one ledger that fails or refuses leaves the others'
//! parts written. Probes are recorded in the operation's ledger; a drill's
//! verdict belongs to one ledger, so a group records none.

use chrono::{DateTime, Utc};

use super::Group;
use crate::domain::{DecisionDraft, DecisionReceipt, DrillVerdict, NewProbe, OpTypeContract};
use crate::error::{Error, Result};
use crate::store::backend::{Decisions, Drills, Probes};

/// An error of a decision as the group says it: what the console and the
/// CLI tell apart (a rule's refusal, a changed or vanished row, a busy
/// ledger) as it is, anything else under the ledger's name.
fn named(name: &str, e: Error) -> Error {
    match e {
        e @ (Error::Refused { .. }
        | Error::VersionConflict { .. }
        | Error::NotFound { .. }
        | Error::Busy { .. }) => e,
        e => Error::in_ledger(name, e),
    }
}

impl Group {
    fn draft_in(&self, draft: &DecisionDraft) -> Result<(usize, DecisionDraft)> {
        let (member, local) = self.spread.split(draft.op_id);
        if member >= self.members.len() {
            return Err(Error::ledger(
                &self.path,
                format!("no operation {} in the group", draft.op_id),
                "pick a row of the list",
            ));
        }
        Ok((
            member,
            DecisionDraft {
                op_id: local,
                ..draft.clone()
            },
        ))
    }

    fn receipt_out(&self, member: usize, mut receipt: DecisionReceipt) -> DecisionReceipt {
        receipt.op_id = self.spread.global(member, receipt.op_id);
        receipt
    }
}

impl Decisions for Group {
    fn record_decision(
        &mut self,
        draft: &DecisionDraft,
        now: DateTime<Utc>,
    ) -> Result<DecisionReceipt> {
        let (k, draft) = self.draft_in(draft)?;
        let slot = &self.members[k];
        let receipt = slot
            .with(|ledger| ledger.record_decision(&draft, now))
            .map_err(|e| named(&slot.name, e))?;
        Ok(self.receipt_out(k, receipt))
    }

    /// Each ledger's drafts in one transaction of that ledger; a ledger
    /// whose part fails as a whole (gone, read-only) gives that failure
    /// to each of its rows, and the other ledgers' parts stand.
    fn record_decisions(
        &mut self,
        drafts: &[DecisionDraft],
        now: DateTime<Utc>,
    ) -> Result<Vec<Result<DecisionReceipt>>> {
        let mut parts: Vec<Vec<(usize, DecisionDraft)>> = vec![Vec::new(); self.members.len()];
        for (i, draft) in drafts.iter().enumerate() {
            let (k, draft) = self.draft_in(draft)?;
            parts[k].push((i, draft));
        }
        let mut out: Vec<Option<Result<DecisionReceipt>>> = drafts.iter().map(|_| None).collect();
        for (k, part) in parts.into_iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            let slot = &self.members[k];
            let local: Vec<DecisionDraft> = part.iter().map(|(_, d)| d.clone()).collect();
            match slot.with(|ledger| ledger.record_decisions(&local, now)) {
                Ok(answers) => {
                    for ((i, _), answer) in part.iter().zip(answers) {
                        out[*i] = Some(
                            answer
                                .map(|r| self.receipt_out(k, r))
                                .map_err(|e| named(&slot.name, e)),
                        );
                    }
                }
                Err(e) => {
                    let line = e.to_string().lines().next().unwrap_or_default().to_string();
                    for (i, _) in &part {
                        out[*i] = Some(Err(Error::in_ledger(
                            &slot.name,
                            Error::ledger(
                                &slot.spec.address,
                                format!("{line}; nothing of this ledger's part was written"),
                                "decide on these rows again once the ledger answers",
                            ),
                        )));
                    }
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(Error::Usage("a draft went to no ledger".into()))))
            .collect())
    }

    fn judge_decision(&self, draft: &DecisionDraft, now: DateTime<Utc>) -> Result<()> {
        let (k, draft) = self.draft_in(draft)?;
        let slot = &self.members[k];
        slot.with(|ledger| ledger.judge_decision(&draft, now))
            .map_err(|e| named(&slot.name, e))
    }
}

impl Probes for Group {
    fn record_probe(&mut self, probe: &NewProbe) -> Result<i64> {
        let (k, local) = self.spread.split(probe.op_id);
        let slot = self.members.get(k).ok_or_else(|| {
            Error::ledger(
                &self.path,
                "a probe of no operation in the group",
                "pick a row of the list",
            )
        })?;
        let probe = NewProbe {
            op_id: local,
            ..probe.clone()
        };
        slot.with(|ledger| ledger.record_probe(&probe))
            .map_err(|e| Error::in_ledger(&slot.name, e))
    }
}

impl Drills for Group {
    fn record_drill(&mut self, _verdict: &DrillVerdict) -> Result<i64> {
        Err(Error::ledger(
            &self.path,
            "a drill's verdict is recorded in the ledger of the receiver it drilled",
            "run the drill against one ledger of the group (settle drill run @NAME)",
        ))
    }

    fn latest_drill(&self, op_type: &str) -> Result<Option<DrillVerdict>> {
        let found = self.every(|_, ledger| ledger.latest_drill(op_type))?;
        Ok(found.into_iter().find_map(|(_, v)| v))
    }

    fn op_type_contract(&self, op_type: &str) -> Result<Option<OpTypeContract>> {
        let found = self.every(|_, ledger| ledger.op_type_contract(op_type))?;
        Ok(found.into_iter().find_map(|(_, c)| c))
    }
}
