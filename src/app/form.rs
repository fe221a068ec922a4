//! The decision form: what the operator typed, the operations it applies to,
//! and the exact drafts and rule checks that follow from them. Pure; the
//! checks are [`rules::check`], the same function the store runs inside the
//! write transaction, recomputed on every keystroke.

use chrono::{DateTime, Utc};

use crate::domain::rules::{self, RuleCheck};
use crate::domain::{
    DecisionDraft, DecisionId, DecisionKind, OperationDetail, OperationId, ProbeOutcome, State,
};
use crate::labels;

/// A field of the form the cursor can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    ResultId,
    Evidence,
    Note,
    Override,
    ConfirmCount,
}

impl Field {
    pub fn label(self) -> &'static str {
        match self {
            Field::ResultId => "result id",
            Field::Evidence => "evidence",
            Field::Note => "note",
            Field::Override => "override committed effect",
            Field::ConfirmCount => "type the count to confirm",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecisionForm {
    pub kind: DecisionKind,
    /// The operations decided on, in list order.
    pub targets: Vec<OperationId>,
    /// Their fresh histories; `None` while the shell is reading them.
    pub details: Option<Vec<OperationDetail>>,
    pub result_id: String,
    pub evidence: String,
    pub note: String,
    pub override_committed: bool,
    pub confirm_count: String,
    pub focus: Field,
    /// For an undo: the decision this one compensates.
    pub undoes: Option<DecisionId>,
    /// `u`'s form: the session decision it takes back, whatever its kind
    /// (recorded, that decision leaves what `u` can undo).
    pub undoing: Option<DecisionId>,
    /// Why the last Enter did not record anything.
    pub problem: Option<String>,
    /// Every row a filter matches (`*`), instead of `targets`.
    pub bulk: Option<Box<super::bulk::Bulk>>,
}

/// One operation's draft with its checks, as the form shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedDecision {
    pub draft: DecisionDraft,
    pub from: State,
    pub to: Option<State>,
    pub checks: Vec<RuleCheck>,
}

impl PlannedDecision {
    pub fn refused(&self) -> Option<&RuleCheck> {
        rules::refusal(&self.checks)
    }
}

impl DecisionForm {
    pub fn new(kind: DecisionKind, targets: Vec<OperationId>, undoes: Option<DecisionId>) -> Self {
        let mut form = DecisionForm {
            kind,
            targets,
            details: None,
            result_id: String::new(),
            evidence: String::new(),
            note: String::new(),
            override_committed: false,
            confirm_count: String::new(),
            focus: Field::Note,
            undoes,
            undoing: None,
            problem: None,
            bulk: None,
        };
        form.focus = form.fields().first().copied().unwrap_or(Field::Note);
        form
    }

    pub fn is_multi(&self) -> bool {
        self.targets.len() > 1
    }

    /// The fields this kind of decision has, in tab order.
    pub fn fields(&self) -> Vec<Field> {
        let mut fields = match self.kind {
            DecisionKind::Applied => vec![Field::ResultId, Field::Evidence, Field::Note],
            DecisionKind::NotApplied => {
                let mut f = vec![Field::Evidence, Field::Note];
                if self.any_committed() {
                    f.push(Field::Override);
                }
                f
            }
            _ => vec![Field::Note],
        };
        if self.is_multi() || self.bulk.is_some() {
            fields.push(Field::ConfirmCount);
        }
        fields
    }

    fn any_committed(&self) -> bool {
        self.details
            .as_ref()
            .is_some_and(|ds| ds.iter().any(OperationDetail::has_committed_event))
    }

    /// Fills the form from the histories when it decides one operation
    /// (see [`DecisionForm::prefill`]).
    pub fn details_loaded(&mut self, details: Vec<OperationDetail>) {
        if let [only] = details.as_slice() {
            self.prefill(only);
        }
        self.details = Some(details);
    }

    /// What is already known starts the form, never over what was typed:
    /// the newest probe, when it answers the question this form asks
    /// (found → `applied` with the receiver's result id, not found → `not
    /// applied`, each citing the probe as evidence); else, for `applied`,
    /// the committed effect's id. A probe lifts no rule: `not applied`
    /// over a committed event still needs the override (`rules::check`).
    fn prefill(&mut self, detail: &OperationDetail) {
        let newest = detail.probes.last();
        let fill = |field: &mut String, text: String| {
            if field.is_empty() {
                *field = text;
            }
        };
        match (self.kind, newest) {
            (DecisionKind::Applied, Some(p)) if p.probe.outcome == ProbeOutcome::Found => {
                fill(
                    &mut self.result_id,
                    p.probe.result_id.clone().unwrap_or_default(),
                );
                fill(&mut self.evidence, labels::probe_evidence(p));
            }
            (DecisionKind::NotApplied, Some(p)) if p.probe.outcome == ProbeOutcome::NotFound => {
                fill(&mut self.evidence, labels::probe_evidence(p));
            }
            (DecisionKind::Applied, _) => {
                fill(
                    &mut self.result_id,
                    committed_result(detail).unwrap_or_default(),
                );
            }
            _ => {}
        }
    }

    pub fn field_text(&mut self, field: Field) -> Option<&mut String> {
        match field {
            Field::ResultId => Some(&mut self.result_id),
            Field::Evidence => Some(&mut self.evidence),
            Field::Note => Some(&mut self.note),
            Field::ConfirmCount => Some(&mut self.confirm_count),
            Field::Override => None,
        }
    }

    pub fn cycle_focus(&mut self, forward: bool) {
        let fields = self.fields();
        let at = fields.iter().position(|f| *f == self.focus).unwrap_or(0);
        let n = fields.len().max(1);
        let next = if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        };
        self.focus = fields.get(next).copied().unwrap_or(Field::Note);
    }

    /// The draft every row of a bulk decision gets, before its id and
    /// version are filled in: what the operator typed, trimmed.
    pub fn template(&self, operator: &str) -> DecisionDraft {
        let text = |s: &str| Some(s.trim().to_string()).filter(|t| !t.is_empty());
        DecisionDraft {
            op_id: OperationId(0),
            kind: self.kind,
            result_id: text(&self.result_id).filter(|_| self.kind == DecisionKind::Applied),
            evidence: text(&self.evidence),
            note: text(&self.note),
            override_committed: self.override_committed,
            operator: operator.to_string(),
            expected_version: 0,
            undoes: None,
        }
    }

    /// Every draft the form would write, with its checks at `now`.
    pub fn plan(&self, operator: &str, now: DateTime<Utc>) -> Vec<PlannedDecision> {
        let Some(details) = &self.details else {
            return Vec::new();
        };
        let text = |s: &str| Some(s.trim().to_string()).filter(|t| !t.is_empty());
        details
            .iter()
            .map(|detail| {
                let result_id = match self.kind {
                    DecisionKind::Applied => {
                        text(&self.result_id).or_else(|| committed_result(detail))
                    }
                    _ => None,
                };
                let draft = DecisionDraft {
                    op_id: detail.operation.id,
                    kind: self.kind,
                    result_id,
                    evidence: text(&self.evidence),
                    note: text(&self.note),
                    override_committed: self.override_committed,
                    operator: operator.to_string(),
                    expected_version: detail.operation.version,
                    undoes: self.undoes,
                };
                let checks = rules::check(&draft, detail, now);
                let to = rules::target_state(&draft, detail);
                PlannedDecision {
                    draft,
                    from: detail.operation.state.clone(),
                    to,
                    checks,
                }
            })
            .collect()
    }

    /// The drafts to record, or why Enter records nothing.
    pub fn confirm(
        &self,
        operator: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<DecisionDraft>, String> {
        if self.details.is_none() {
            return Err("still reading the operations; try again in a moment".to_string());
        }
        let plan = self.plan(operator, now);
        if plan.is_empty() {
            return Err("none of the operations could be read; nothing to record".to_string());
        }
        let refused: Vec<_> = plan
            .iter()
            .filter_map(|p| p.refused().map(|c| (p, c)))
            .collect();
        if let Some((p, check)) = refused.first() {
            let others = match refused.len() {
                1 => String::new(),
                n => format!(" (and {} more refused)", n - 1),
            };
            return Err(format!(
                "refused: #{} {}: {}{others}",
                p.draft.op_id,
                check.rule.label(),
                check.verdict.text()
            ));
        }
        if self.is_multi() && self.confirm_count.trim() != self.targets.len().to_string() {
            return Err(format!(
                "{} operations: type {} in the confirm field to record them all",
                self.targets.len(),
                self.targets.len()
            ));
        }
        Ok(plan.into_iter().map(|p| p.draft).collect())
    }
}

/// The effect id of the first committed event that names one.
pub fn committed_result(detail: &OperationDetail) -> Option<String> {
    detail
        .committed_effects()
        .into_iter()
        .find(|e| !e.is_empty())
        .or_else(|| detail.operation.result_id.clone())
}
