//! The mapping file a team writes for its own operations table (TOML):
//! parsed into [`Mapping`], every field kept with the line it is on, so a
//! refusal at open or at a decision names the file and the line. Parsing
//! only; what the database says of it is [`super::sql`]'s.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Error, Result};

const HINT: &str = "the mapping names: table, id, key, account, op_type, params, created, \
     last_attempt, locked, stuck, and optionally done, failed, version, last_error, and a \
     [decisions] \
     table with applied, not_applied, retry_same_key; see docs/mapped-tables.md";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    table: Spanned<String>,
    id: Spanned<String>,
    key: Spanned<String>,
    account: Spanned<String>,
    op_type: Spanned<String>,
    params: Spanned<String>,
    created: Spanned<String>,
    last_attempt: Spanned<String>,
    locked: Spanned<String>,
    stuck: Spanned<String>,
    done: Option<Spanned<String>>,
    failed: Option<Spanned<String>>,
    version: Option<Spanned<String>>,
    last_error: Option<Spanned<String>>,
    #[serde(default)]
    decisions: DecisionsShape,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DecisionsShape {
    applied: Option<Spanned<String>>,
    not_applied: Option<Spanned<String>>,
    retry_same_key: Option<Spanned<String>>,
}

/// One field of the mapping: its name, its SQL text and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub text: String,
    pub line: usize,
}

/// A team's operations table as its mapping file says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub file: PathBuf,
    pub table: Field,
    /// The row's id, a bigint: settle's operation id.
    pub id: Field,
    pub key: Field,
    pub account: Field,
    pub op_type: Field,
    pub params: Field,
    pub created: Field,
    pub last_attempt: Field,
    pub locked: Field,
    pub stuck: Field,
    pub done: Option<Field>,
    /// Of a done row: its effect did not happen (finished with an error).
    pub failed: Option<Field>,
    /// A number that moves whenever the row changes; `xmin` unless said.
    pub version: Field,
    pub last_error: Option<Field>,
    pub applied: Option<Field>,
    pub not_applied: Option<Field>,
    pub retry_same_key: Option<Field>,
}

/// The version settle guards on unless the mapping says otherwise: the
/// row's `xmin` moves with every update of the row, whoever makes it,
/// where a time column such as `last_run_at` moves only when the team's
/// code remembers to set it (rocket-rides clears `locked_at` without it).
pub(crate) const XMIN: &str = "xmin::text::bigint";

impl Mapping {
    /// Reads and parses the file at `path`.
    pub(crate) fn load(path: &Path) -> Result<Mapping> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::ledger(
                path,
                format!("cannot read the mapping file: {e}"),
                "give the mapping with --map FILE, or put mapping.toml beside the receivers file",
            )
        })?;
        Mapping::parse(path, &text)
    }

    /// Parses `text`, read from `path`: a malformed file is refused with
    /// its line and what the file must say.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Mapping> {
        let shape: Shape = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| format!(" at line {}", line_of(text, s.start)))
                .unwrap_or_default();
            Error::ledger(
                path,
                format!("the mapping file is not valid{at}: {}", e.message()),
                HINT,
            )
        })?;
        let field = |name: &'static str, s: Spanned<String>| Field {
            name,
            line: line_of(text, s.span().start),
            text: s.into_inner(),
        };
        let opt = |name: &'static str, s: Option<Spanned<String>>| s.map(|s| field(name, s));
        let mapping = Mapping {
            file: path.to_path_buf(),
            version: opt("version", shape.version).unwrap_or(Field {
                name: "version",
                text: XMIN.to_string(),
                line: 0,
            }),
            table: field("table", shape.table),
            id: field("id", shape.id),
            key: field("key", shape.key),
            account: field("account", shape.account),
            op_type: field("op_type", shape.op_type),
            params: field("params", shape.params),
            created: field("created", shape.created),
            last_attempt: field("last_attempt", shape.last_attempt),
            locked: field("locked", shape.locked),
            stuck: field("stuck", shape.stuck),
            done: opt("done", shape.done),
            failed: opt("failed", shape.failed),
            last_error: opt("last_error", shape.last_error),
            applied: opt("decisions.applied", shape.decisions.applied),
            not_applied: opt("decisions.not_applied", shape.decisions.not_applied),
            retry_same_key: opt("decisions.retry_same_key", shape.decisions.retry_same_key),
        };
        if let Some(empty) = mapping
            .fields()
            .into_iter()
            .find(|f| f.text.trim().is_empty())
        {
            return Err(mapping.refused(empty, "is empty", "write the column or SQL expression"));
        }
        Ok(mapping)
    }

    /// Every field read as SQL over the table, in the file's terms.
    pub(crate) fn expressions(&self) -> Vec<&Field> {
        let mut all = vec![
            &self.id,
            &self.key,
            &self.account,
            &self.op_type,
            &self.params,
            &self.created,
            &self.last_attempt,
            &self.locked,
            &self.stuck,
            &self.version,
        ];
        all.extend(self.done.iter());
        all.extend(self.failed.iter());
        all.extend(self.last_error.iter());
        all
    }

    /// The decision statements the mapping has.
    pub(crate) fn statements(&self) -> Vec<&Field> {
        [&self.applied, &self.not_applied, &self.retry_same_key]
            .into_iter()
            .flatten()
            .collect()
    }

    fn fields(&self) -> Vec<&Field> {
        let mut all = vec![&self.table];
        all.extend(self.expressions());
        all.extend(self.statements());
        all
    }

    /// A refusal naming the file and the field's line: `problem` says what
    /// is wrong with it, `hint` what to do.
    pub(crate) fn refused(&self, field: &Field, problem: &str, hint: &str) -> Error {
        let at = if field.line == 0 {
            format!("the default {} ({})", field.name, field.text)
        } else {
            format!("line {} ({} = {:?})", field.line, field.name, field.text)
        };
        Error::ledger(
            &self.file,
            format!("{at} {problem}"),
            format!("{hint}; then open again"),
        )
    }

    /// Which decisions write the team's row, and which are settle's only.
    pub(crate) fn summary(&self) -> String {
        let say = |name: &str, f: &Option<Field>| match f {
            Some(_) => format!("{name} writes the table's row"),
            None => format!("{name} is recorded in settle's schema only"),
        };
        format!(
            "{} mapped by {}: {}; {}; {}",
            self.table.text,
            self.file.display(),
            say("applied", &self.applied),
            say("not_applied", &self.not_applied),
            say("retry_same_key", &self.retry_same_key)
        )
    }
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).unwrap_or(text).matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROCKET: &str = include_str!("../../../../sample-data/mapping/rocket-rides.toml");

    #[test]
    fn the_sample_parses_with_each_field_on_its_line() {
        let m = Mapping::parse(Path::new("m.toml"), ROCKET).unwrap();
        assert_eq!(m.table.text, "idempotency_keys");
        let line = ROCKET.lines().position(|l| l.starts_with("stuck")).unwrap() + 1;
        assert_eq!(m.stuck.line, line);
        assert_eq!(m.version.text, XMIN);
        assert!(m.applied.is_some() && m.not_applied.is_some() && m.retry_same_key.is_some());
    }

    #[test]
    fn a_bad_file_names_the_line_and_what_to_write() {
        let e = Mapping::parse(Path::new("m.toml"), "table = \"t\"\nid = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.toml") && e.contains("line 2"), "{e}");
        let e = Mapping::parse(Path::new("m.toml"), "table = \"t\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field"), "{e}");
    }
}
