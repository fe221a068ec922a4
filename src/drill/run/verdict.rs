//! The verdict of a run on its op type: does the receiver honour keys
//! under concurrency, refuse changed params, replay the same result id,
//! keep keys as long as declared, and which case (if any) made a second
//! effect under one key. Each flaw is named; nothing is guessed.

use serde_json::{Value, json};

use super::record::CaseRecord;
use super::settings::Declared;

/// One question of the verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    Yes,
    No(String),
    /// The case that answers it did not run (why).
    NotRun(String),
    /// It ran and could not tell (why).
    Unknown(String),
}

impl Check {
    fn to_json(&self) -> Value {
        match self {
            Check::Yes => json!({ "answer": "yes" }),
            Check::No(why) => json!({ "answer": "no", "why": why }),
            Check::NotRun(why) => json!({ "answer": "not run", "why": why }),
            Check::Unknown(why) => json!({ "answer": "unknown", "why": why }),
        }
    }
}

/// A second effect under one key, and the case that showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Duplicate {
    pub case: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpVerdict {
    pub op_type: String,
    pub concurrency: Check,
    pub changed_params: Check,
    pub same_result_id: Check,
    pub retention: Check,
    pub declared_retention_s: Option<i64>,
    pub observed_retention_s: Option<f64>,
    /// The first case where one key made more than one effect.
    pub duplicate: Option<Duplicate>,
    /// Other params under a used key were replayed, not refused.
    pub params_ignored: bool,
    /// One line per flaw found.
    pub flaws: Vec<String>,
}

/// Cases where a second effect is the point (another key, or a key past
/// its declared retention), not a flaw.
const HAZARD_CASES: [&str; 2] = ["changed_key", "expiry_retry"];

pub fn judge(op_type: &str, cases: &[CaseRecord], declared: &Declared) -> OpVerdict {
    let find = |id: &str| cases.iter().find(|c| c.case == id);
    let not_run = |id: &str| Check::NotRun(format!("case {id} did not run"));
    let concurrency =
        find("concurrent_same_key").map_or(not_run("concurrent_same_key"), one_effect_one_id);
    let changed_params = find("parameter_mismatch").map_or(not_run("parameter_mismatch"), |c| {
        match c.attempts.last().map(|a| a.result) {
            Some("conflict") => Check::Yes,
            Some("success") => Check::No(
                "a used key with other params was answered as a replay, not refused".into(),
            ),
            other => Check::Unknown(format!(
                "the second call ended in {}",
                other.unwrap_or("nothing")
            )),
        }
    });
    let same_result_id = ["lost_response", "later_invocation"]
        .iter()
        .filter_map(|id| find(id))
        .map(|c| match c.observed.get("same_result_id") {
            Some(Value::Bool(true)) => Check::Yes,
            Some(Value::Bool(false)) => Check::No(format!(
                "case {}: the retry returned another result id",
                c.case
            )),
            _ => Check::Unknown(format!("case {}: the first result id is unknown", c.case)),
        })
        .reduce(|a, b| if a == Check::Yes { b } else { a })
        .unwrap_or(not_run("lost_response"));
    let observed_retention_s = find("observed_retention")
        .and_then(|c| c.observed.get("observed_retention_s"))
        .and_then(Value::as_f64);
    let retention = find("observed_retention").map_or(not_run("observed_retention"), |c| {
        retention_check(c, observed_retention_s, declared)
    });
    let duplicate = cases
        .iter()
        .filter(|c| !HAZARD_CASES.contains(&c.case))
        .find_map(duplicate_in);
    let params_ignored = matches!(changed_params, Check::No(_));
    let mut flaws = Vec::new();
    for (name, check) in [
        ("concurrency", &concurrency),
        ("changed params", &changed_params),
        ("result id", &same_result_id),
        ("retention", &retention),
    ] {
        if let Check::No(why) = check {
            flaws.push(format!("{name}: {why}"));
        }
    }
    if let Some(d) = &duplicate
        && !flaws.iter().any(|f| f.contains(&d.why))
    {
        flaws.push(format!("duplicate under one key in {}: {}", d.case, d.why));
    }
    OpVerdict {
        op_type: op_type.to_string(),
        concurrency,
        changed_params,
        same_result_id,
        retention,
        declared_retention_s: declared.key_retention_s,
        observed_retention_s,
        duplicate,
        params_ignored,
        flaws,
    }
}

/// `observed_retention`: kept as declared, forgotten early (the flaw), or
/// still remembered when the wait ran out short of the declared retention.
fn retention_check(c: &CaseRecord, observed_s: Option<f64>, declared: &Declared) -> Check {
    match (c.observed.get("remembered_as_declared"), observed_s) {
        (Some(Value::Bool(false)), Some(o)) => Check::No(format!(
            "keys forgotten after {o:.1} s of a declared {} s",
            declared.key_retention_s.unwrap_or_default()
        )),
        (Some(Value::Null), None) => Check::Unknown(format!(
            "remembered at least {:.1} s of a declared {} s: not proven",
            c.observed
                .get("remembered_at_least_s")
                .and_then(Value::as_f64)
                .unwrap_or_default(),
            declared.key_retention_s.unwrap_or_default()
        )),
        (_, Some(_)) | (_, None) => Check::Yes,
    }
}

/// `concurrent_same_key`: one effect and one result id for all callers.
fn one_effect_one_id(c: &CaseRecord) -> Check {
    let ids = c.result_ids();
    if ids.len() > 1 {
        return Check::No(format!(
            "{} callers of one key got {} result ids ({})",
            c.attempts.len(),
            ids.len(),
            ids.join(", ")
        ));
    }
    match c.effect_count {
        Some((n, _)) if n > 1 => Check::No(format!(
            "{} callers of one key made {n} effects",
            c.attempts.len()
        )),
        Some(_) => Check::Yes,
        None => Check::Unknown(
            c.count_unknown
                .clone()
                .unwrap_or_else(|| "the effect count is unknown".into()),
        ),
    }
}

/// More than one effect (or result id) where one key was used for one
/// intent.
fn duplicate_in(c: &CaseRecord) -> Option<Duplicate> {
    let ids = c.result_ids();
    let count = c.effect_count.map(|(n, _)| n);
    let why = match count {
        Some(n) if n > 1 => format!("{n} effects under key {}", c.key),
        _ if ids.len() > 1 && c.case != "parameter_mismatch" => {
            format!(
                "{} result ids under key {} ({})",
                ids.len(),
                c.key,
                ids.join(", ")
            )
        }
        _ => return None,
    };
    let why = match c
        .observed
        .get("observed_retention_s")
        .and_then(Value::as_f64)
    {
        Some(o) if c.case == "observed_retention" => {
            format!("{why}: the key was forgotten after {o:.1} s, sooner than declared")
        }
        _ => why,
    };
    Some(Duplicate {
        case: c.case.to_string(),
        why,
    })
}

impl OpVerdict {
    pub fn to_json(&self) -> Value {
        json!({
            "op_type": self.op_type,
            "honours_keys_under_concurrency": self.concurrency.to_json(),
            "refuses_changed_params": self.changed_params.to_json(),
            "replays_same_result_id": self.same_result_id.to_json(),
            "retention": {
                "declared_s": self.declared_retention_s,
                "observed_s": self.observed_retention_s,
                "as_declared": self.retention.to_json(),
            },
            "duplicate_under_one_key": self.duplicate.as_ref().map(|d| json!({
                "case": d.case,
                "why": d.why,
            })),
            "params_ignored_on_replay": self.params_ignored,
            "flaws": self.flaws,
        })
    }

    /// One line for people: the flaws, or that none was found.
    pub fn summary(&self) -> String {
        if self.flaws.is_empty() {
            format!("{}: no flaw found", self.op_type)
        } else {
            format!("{}: {}", self.op_type, self.flaws.join("; "))
        }
    }
}
