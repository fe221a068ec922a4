//! What an analysis reports besides its verdicts: findings by severity,
//! and each `expected` field checked against what the file shows.

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The receiver did something the caller did not mean (a duplicate).
    Error,
    /// The file contradicts itself or its expectation.
    Warning,
    /// Worth knowing: a timeout after a commit, an unknown event word.
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `None` for a finding about the whole file.
    pub case: Option<String>,
    pub severity: Severity,
    pub text: String,
}

/// One `expected` field against what the file itself shows.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldCheck {
    pub field: String,
    pub expected: Value,
    /// What this analysis computes from attempts and final state; `None` for
    /// a field it cannot compute.
    pub recomputed: Option<Value>,
    pub observed: Option<Value>,
}

impl FieldCheck {
    /// Whether the expectation holds, judged on the recomputed value when
    /// there is one, else on the producer's observed value.
    pub fn holds(&self) -> Option<bool> {
        self.recomputed
            .as_ref()
            .or(self.observed.as_ref())
            .map(|v| *v == self.expected)
    }
}
