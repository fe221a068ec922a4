//! The tolerant reader of `retry-drill/1` results files: JSON text in,
//! [`DrillFile`] out. It keeps what it does not understand (unknown fields,
//! unknown event words, newer formats) and turns a wrong-typed field into a
//! warning instead of a failure. It judges nothing: the verdicts are
//! [`super::analysis`]'s job. No terminal, no SQL.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, Result};

/// The format this reader was written for. A file without `format` is one
/// (contract: "absent in older files: treat as `retry-drill/1`").
pub const FORMAT: &str = "retry-drill/1";

/// One results file as read: known fields typed, the rest kept raw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillFile {
    /// Where the file came from, for messages and reports.
    pub source: PathBuf,
    /// The declared format, or [`FORMAT`] when the file declares none.
    pub format: String,
    pub generated_at: Option<String>,
    /// The producer's claim that every case met its expectation. Not a
    /// safety verdict.
    pub passed: Option<bool>,
    pub cases: Vec<DrillCase>,
    /// Top-level fields this reader does not know (`python`, `platform`, ...),
    /// in file order, shown raw.
    pub extra: Map<String, Value>,
    /// What was read best-effort: a newer format, wrong-typed fields,
    /// skipped entries. Each names the case and field.
    pub warnings: Vec<String>,
}

/// One case of a drill.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillCase {
    /// The case id; `case-<n>` (1-based position) when the file has none.
    pub case: String,
    pub title: Option<String>,
    pub strategy: Option<String>,
    pub operation: Option<DrillOperation>,
    pub max_attempts: Option<i64>,
    pub attempts: Vec<DrillAttempt>,
    pub events: Vec<DrillEvent>,
    pub final_state: Option<FinalState>,
    /// `None` when the file has no `expected` object.
    pub expected: Option<Map<String, Value>>,
    pub observed: Option<Map<String, Value>>,
    pub passed: Option<bool>,
    pub extra: Map<String, Value>,
}

/// The logical operation a case drives.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillOperation {
    pub account: Option<String>,
    pub op_type: Option<String>,
    pub key: Option<String>,
    pub params: Option<Value>,
    pub fingerprint: Option<String>,
    pub extra: Map<String, Value>,
}

/// One attempt as the caller saw it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillAttempt {
    /// 1-based; the position in the file when the field is missing.
    pub attempt: i64,
    pub key: Option<String>,
    pub params: Option<Value>,
    /// `before_effect`, `after_commit`, another producer's word, or `None`.
    pub fault: Option<String>,
    /// `success`, `timeout`, `conflict`, `error`, or another producer's word.
    pub result: Option<String>,
    pub response: Option<Value>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub extra: Map<String, Value>,
}

/// One receiver event. `event` is kept as written, known word or not.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrillEvent {
    pub seq: Option<i64>,
    pub attempt: Option<i64>,
    pub event: String,
    pub at: Option<String>,
    /// Every other field (`effect_id`, `phase`, `key`, ...), in file order.
    pub detail: Map<String, Value>,
}

impl DrillEvent {
    /// `effect_id` of a `committed` or `replayed` event, as text.
    pub fn effect_id(&self) -> Option<String> {
        match self.detail.get("effect_id")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
}

/// The receiver's state after the case.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FinalState {
    pub effects: Vec<Effect>,
    pub keys: Map<String, Value>,
    pub extra: Map<String, Value>,
}

/// One committed effect in the receiver's final state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Effect {
    pub id: Option<String>,
    pub key: Option<String>,
    pub params: Option<Value>,
    pub extra: Map<String, Value>,
}

/// Reads and parses a results file. See [`parse`].
pub fn read_file(path: &Path) -> Result<DrillFile> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        doing: "reading drill results".to_string(),
        source,
    })?;
    parse(path, &text)
}

/// Parses results text. `path` is only used in messages and kept as
/// [`DrillFile::source`]. Fails only when the text is not JSON or not a drill
/// (no object with a `cases` array); everything else becomes a warning.
pub fn parse(path: &Path, text: &str) -> Result<DrillFile> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's message ends with " at line L column C"; the position
        // is carried separately so it is printed once, as `file:line:col`.
        let full = e.to_string();
        let problem = full
            .split(" at line ")
            .next()
            .unwrap_or(full.as_str())
            .to_string();
        Error::Drill {
            path: path.to_path_buf(),
            position: Some((e.line(), e.column())),
            problem: format!("not valid JSON: {problem}"),
            hint:
                "the file may be truncated or still being written; re-run the drill or fix the file"
                    .to_string(),
        }
    })?;
    let not_a_drill = |found: String| Error::Drill {
        path: path.to_path_buf(),
        position: None,
        problem: format!(
            "not a drill results file: expected a JSON object with a `cases` array ({FORMAT}), found {found}"
        ),
        hint: "pass the drill-results.json a retry drill wrote".to_string(),
    };
    let Value::Object(top) = value else {
        return Err(not_a_drill(describe(&value).to_string()));
    };
    if !top.contains_key("cases") {
        return Err(not_a_drill("an object without `cases`".to_string()));
    }

    let mut file = DrillFile {
        source: path.to_path_buf(),
        format: FORMAT.to_string(),
        ..DrillFile::default()
    };
    let mut warnings = Warnings::default();
    for (field, value) in top {
        match field.as_str() {
            "format" => {
                if let Some(format) = warnings.string("file", "format", value) {
                    file.format = format;
                }
            }
            "generated_at" => file.generated_at = warnings.string("file", "generated_at", value),
            "passed" => file.passed = warnings.bool("file", "passed", value),
            "cases" => match value {
                Value::Array(cases) => {
                    file.cases = cases
                        .into_iter()
                        .enumerate()
                        .filter_map(|(i, case)| read_case(i, case, &mut warnings))
                        .collect();
                }
                other => {
                    return Err(not_a_drill(format!("`cases` as {}", describe(&other))));
                }
            },
            _ => {
                file.extra.insert(field, value);
            }
        }
    }
    if file.format != FORMAT {
        warnings.0.insert(
            0,
            format!(
                "format `{}` is not {FORMAT}, the format this console knows: read best-effort, unknown fields kept raw",
                file.format
            ),
        );
    }
    file.warnings = warnings.0;
    Ok(file)
}

fn read_case(index: usize, value: Value, warnings: &mut Warnings) -> Option<DrillCase> {
    let Value::Object(map) = value else {
        warnings.0.push(format!(
            "case #{}: is {}, not an object: skipped",
            index + 1,
            describe(&value)
        ));
        return None;
    };
    let id = match map.get("case") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            let id = format!("case-{}", index + 1);
            warnings.0.push(format!(
                "case #{}: no `case` id string; called it `{id}`",
                index + 1
            ));
            id
        }
    };
    let mut case = DrillCase {
        case: id.clone(),
        ..DrillCase::default()
    };
    let whose = format!("case {id}");
    for (field, value) in map {
        match field.as_str() {
            "case" => {}
            "title" => case.title = warnings.string(&whose, "title", value),
            "strategy" => case.strategy = warnings.string(&whose, "strategy", value),
            "max_attempts" => case.max_attempts = warnings.int(&whose, "max_attempts", value),
            "passed" => case.passed = warnings.bool(&whose, "passed", value),
            "expected" => case.expected = warnings.object(&whose, "expected", value),
            "observed" => case.observed = warnings.object(&whose, "observed", value),
            "operation" => {
                case.operation = warnings
                    .object(&whose, "operation", value)
                    .map(|op| read_operation(&whose, op, warnings));
            }
            "final_state" => {
                case.final_state = warnings
                    .object(&whose, "final_state", value)
                    .map(|state| read_final_state(&whose, state, warnings));
            }
            "attempts" => {
                case.attempts = warnings
                    .objects(&whose, "attempts", value)
                    .into_iter()
                    .map(|(i, a)| read_attempt(&whose, i, a, warnings))
                    .collect();
            }
            "events" => {
                case.events = warnings
                    .objects(&whose, "events", value)
                    .into_iter()
                    .map(|(i, e)| read_event(&whose, i, e, warnings))
                    .collect();
            }
            _ => {
                case.extra.insert(field, value);
            }
        }
    }
    Some(case)
}

fn read_operation(whose: &str, map: Map<String, Value>, w: &mut Warnings) -> DrillOperation {
    let mut op = DrillOperation::default();
    for (field, value) in map {
        let name = format!("operation.{field}");
        match field.as_str() {
            "account" => op.account = w.string(whose, &name, value),
            "op_type" => op.op_type = w.string(whose, &name, value),
            "key" => op.key = w.string(whose, &name, value),
            "fingerprint" => op.fingerprint = w.string(whose, &name, value),
            "params" => op.params = Some(value),
            _ => {
                op.extra.insert(field, value);
            }
        }
    }
    op
}

fn read_attempt(
    whose: &str,
    index: usize,
    map: Map<String, Value>,
    w: &mut Warnings,
) -> DrillAttempt {
    let mut attempt = DrillAttempt::default();
    let mut number = None;
    for (field, value) in map {
        let name = format!("attempts[{index}].{field}");
        match field.as_str() {
            "attempt" => number = w.int(whose, &name, value),
            "key" => attempt.key = w.string(whose, &name, value),
            "fault" => attempt.fault = w.string(whose, &name, value),
            "result" => attempt.result = w.string(whose, &name, value),
            "started_at" => attempt.started_at = w.string(whose, &name, value),
            "ended_at" => attempt.ended_at = w.string(whose, &name, value),
            "params" => attempt.params = Some(value),
            "response" => attempt.response = (!value.is_null()).then_some(value),
            _ => {
                attempt.extra.insert(field, value);
            }
        }
    }
    // Attempts are 1-based and in order; the position is the best guess.
    attempt.attempt = number.unwrap_or(index as i64 + 1);
    attempt
}

fn read_event(whose: &str, index: usize, map: Map<String, Value>, w: &mut Warnings) -> DrillEvent {
    let mut event = DrillEvent::default();
    let mut word = None;
    for (field, value) in map {
        let name = format!("events[{index}].{field}");
        match field.as_str() {
            "seq" => event.seq = w.int(whose, &name, value),
            "attempt" => event.attempt = w.int(whose, &name, value),
            "at" => event.at = w.string(whose, &name, value),
            "event" => word = w.string(whose, &name, value),
            _ => {
                event.detail.insert(field, value);
            }
        }
    }
    event.event = word.unwrap_or_else(|| {
        w.0.push(format!("{whose}: events[{index}] has no `event` word"));
        String::new()
    });
    event
}

fn read_final_state(whose: &str, map: Map<String, Value>, w: &mut Warnings) -> FinalState {
    let mut state = FinalState::default();
    for (field, value) in map {
        match field.as_str() {
            "effects" => {
                state.effects = w
                    .objects(whose, "final_state.effects", value)
                    .into_iter()
                    .map(|(i, effect)| read_effect(whose, i, effect, w))
                    .collect();
            }
            "keys" => {
                state.keys = w
                    .object(whose, "final_state.keys", value)
                    .unwrap_or_default()
            }
            _ => {
                state.extra.insert(field, value);
            }
        }
    }
    state
}

fn read_effect(whose: &str, index: usize, map: Map<String, Value>, w: &mut Warnings) -> Effect {
    let mut effect = Effect::default();
    for (field, value) in map {
        let name = format!("final_state.effects[{index}].{field}");
        match field.as_str() {
            // Producers number effects as often as they name them.
            "id" => {
                effect.id = match value {
                    Value::Number(n) => Some(n.to_string()),
                    other => w.string(whose, &name, other),
                }
            }
            "key" => effect.key = w.string(whose, &name, value),
            "params" => effect.params = Some(value),
            _ => {
                effect.extra.insert(field, value);
            }
        }
    }
    effect
}

/// Collects what was read best-effort. Each typed getter returns `None` for
/// `null` silently (the contract allows it) and for a wrong type with a
/// warning naming whose field it is (`file`, `case <id>`) and the field.
#[derive(Default)]
struct Warnings(Vec<String>);

impl Warnings {
    fn wrong(&mut self, whose: &str, field: &str, expected: &str, value: &Value) {
        self.0.push(format!(
            "{whose}: `{field}` is {}, expected {expected}: ignored",
            describe(value)
        ));
    }

    fn string(&mut self, whose: &str, field: &str, value: Value) -> Option<String> {
        match value {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => {
                self.wrong(whose, field, "a string", &other);
                None
            }
        }
    }

    fn int(&mut self, whose: &str, field: &str, value: Value) -> Option<i64> {
        match value {
            Value::Null => None,
            Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
            other => {
                self.wrong(whose, field, "an integer", &other);
                None
            }
        }
    }

    fn bool(&mut self, whose: &str, field: &str, value: Value) -> Option<bool> {
        match value {
            Value::Null => None,
            Value::Bool(b) => Some(b),
            other => {
                self.wrong(whose, field, "true or false", &other);
                None
            }
        }
    }

    fn object(&mut self, whose: &str, field: &str, value: Value) -> Option<Map<String, Value>> {
        match value {
            Value::Null => None,
            Value::Object(map) => Some(map),
            other => {
                self.wrong(whose, field, "an object", &other);
                None
            }
        }
    }

    /// The objects of an array field with their positions; non-objects are
    /// skipped with a warning so one bad entry does not hide the others.
    fn objects(
        &mut self,
        whose: &str,
        field: &str,
        value: Value,
    ) -> Vec<(usize, Map<String, Value>)> {
        let items = match value {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            other => {
                self.wrong(whose, field, "an array", &other);
                return Vec::new();
            }
        };
        let mut objects = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Value::Object(map) => objects.push((i, map)),
                other => self.wrong(whose, &format!("{field}[{i}]"), "an object", &other),
            }
        }
        objects
    }
}

/// "an array", "a string", ... for messages.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
