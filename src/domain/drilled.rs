//! What a drill proved about an op type's receiver, as the ledger keeps it
//! (`settle_drills`, append-only, one row per run): the contract the rules
//! trust is then "drilled on DATE" rather than only declared, and a
//! duplicate found under one key guards the same-key retry.

/// One drill run's verdict on an op type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrillVerdict {
    /// The row's id; 0 before it is recorded.
    pub id: i64,
    pub op_type: String,
    /// The run's id (its folder is `drill-<run>`).
    pub run: String,
    /// When it ran (RFC 3339).
    pub drilled_at: String,
    /// The results file it wrote.
    pub results: String,
    /// The case in which one key made more than one effect, and why.
    pub duplicate_case: Option<String>,
    pub duplicate_why: Option<String>,
    /// Other params under a used key were replayed, not refused.
    pub params_ignored: bool,
    /// Every flaw found, one a line; empty when none.
    pub flaws: String,
    pub operator: String,
}

impl DrillVerdict {
    /// "drilled on 2026-12-01 (run 20261201T…)", for the form and `show`.
    pub fn drilled_on(&self) -> String {
        let date = self.drilled_at.get(..10).unwrap_or(&self.drilled_at);
        format!("drilled on {date} (run {})", self.run)
    }

    /// The flaws on one line, or that none was found.
    pub fn flaws_line(&self) -> String {
        if self.flaws.trim().is_empty() {
            "no flaw found".to_string()
        } else {
            self.flaws.lines().collect::<Vec<_>>().join("; ")
        }
    }

    /// The run's folder and file (`drill-<run>/drill-results.json`): where
    /// the proof is, short enough for a line.
    pub fn run_file(&self) -> String {
        run_file(&self.results)
    }
}

/// A results path's folder and file (`drill-<run>/drill-results.json`).
pub fn run_file(results: &str) -> String {
    let parts: Vec<&str> = results.rsplit(['/', '\\']).take(2).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// How the contract of an op type is known, for the form, the detail and
/// `show`: only declared (`declared_by`: by its `op_types` row, by the
/// receivers file, or both; see [`super::declared::declared_by`]), or
/// drilled on a date, with the run, its results and what it found. A drill
/// on a type the file declares says the file too: the drill proved the
/// receiver, the file still says what it promises.
pub fn contract_source(declared_by: Option<&str>, drill: Option<&DrillVerdict>) -> String {
    match drill {
        None => match declared_by {
            Some(by) => format!("declared by {by} (never drilled)"),
            None => "neither declared (no op_types row) nor drilled".to_string(),
        },
        Some(d) => {
            let by = declared_by
                .filter(|by| *by != "op_types")
                .map(|by| format!("; declared by {by}"))
                .unwrap_or_default();
            format!(
                "{}: {}; results {}{by}",
                d.drilled_on(),
                d.flaws_line(),
                d.run_file()
            )
        }
    }
}
