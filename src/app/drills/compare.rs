//! The Drills view's comparison across runs: each case (matched by its
//! name) with its verdict in every readable drill file, flagged by what
//! changed between the first run that has it and the last, loudest first.
//! Pure: derived from the loaded files each time it is asked for, so it
//! cannot go stale when a file is added; drawn by `ui::drills`.

use super::files::{DrillRow, LoadedDrill, verdict_rank};
use crate::drill::Verdict;

/// What happened to a case across the runs, in the order the comparison
/// lists them: what needs the reader's eye first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaseChange {
    /// Worse in the last run than in the first (safe, now duplicates).
    Regression,
    /// Better in the last run than in the first.
    Fixed,
    /// Absent from at least one run.
    Missing,
    /// Same verdict first and last, another in between.
    Changed,
    Same,
}

impl CaseChange {
    pub fn label(self) -> &'static str {
        match self {
            CaseChange::Regression => "regression",
            CaseChange::Fixed => "fixed",
            CaseChange::Missing => "missing",
            CaseChange::Changed => "changed",
            CaseChange::Same => "same",
        }
    }
}

/// One case across the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseAcrossRuns {
    pub case: String,
    /// The case's row in each run (`None`: not in that run), in run order.
    pub rows: Vec<Option<DrillRow>>,
    pub verdicts: Vec<Option<Verdict>>,
    pub change: CaseChange,
}

/// The runs compared (the readable files, in load order) and every case
/// of any of them, loudest change first, then as the first run lists them.
/// The filter keeps cases whose name contains it.
pub fn compare(files: &[LoadedDrill], filter_text: &str) -> (Vec<usize>, Vec<CaseAcrossRuns>) {
    let runs: Vec<usize> = (0..files.len())
        .filter(|f| files.get(*f).is_some_and(|l| l.analysis.is_ok()))
        .collect();
    let needle = filter_text.to_lowercase();
    let mut cases: Vec<CaseAcrossRuns> = Vec::new();
    for (r, &file) in runs.iter().enumerate() {
        let Some(Ok(pair)) = files.get(file).map(|l| &l.analysis) else {
            continue;
        };
        for (c, analysis) in pair.1.cases.iter().enumerate() {
            if !needle.is_empty() && !analysis.case.to_lowercase().contains(&needle) {
                continue;
            }
            let index = match cases.iter().position(|x| x.case == analysis.case) {
                Some(i) => i,
                None => {
                    cases.push(CaseAcrossRuns {
                        case: analysis.case.clone(),
                        rows: vec![None; runs.len()],
                        verdicts: vec![None; runs.len()],
                        change: CaseChange::Same,
                    });
                    cases.len() - 1
                }
            };
            if let Some(case) = cases.get_mut(index) {
                // A name repeated within one run: its first row speaks.
                if case.rows[r].is_none() {
                    case.rows[r] = Some(DrillRow {
                        file,
                        case: Some(c),
                    });
                    case.verdicts[r] = Some(analysis.verdict);
                }
            }
        }
    }
    for case in &mut cases {
        case.change = change(&case.verdicts);
    }
    // Stable: within one kind of change, the first run's order stays.
    cases.sort_by_key(|c| c.change);
    (runs, cases)
}

/// First against last run that has the case; a worse verdict is a
/// regression even when the case is also missing somewhere, as that is
/// the louder news.
fn change(verdicts: &[Option<Verdict>]) -> CaseChange {
    let present: Vec<Verdict> = verdicts.iter().flatten().copied().collect();
    let (Some(first), Some(last)) = (present.first(), present.last()) else {
        return CaseChange::Missing;
    };
    // Lower rank is worse (duplicates first).
    if verdict_rank(*last) < verdict_rank(*first) {
        CaseChange::Regression
    } else if verdict_rank(*last) > verdict_rank(*first) {
        CaseChange::Fixed
    } else if present.len() < verdicts.len() {
        CaseChange::Missing
    } else if present.iter().any(|v| v != first) {
        CaseChange::Changed
    } else {
        CaseChange::Same
    }
}
