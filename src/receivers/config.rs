//! The receivers file (`receivers.toml`): which command asks a receiver
//! whether an operation's effect exists (`lookup`) and which re-sends it
//! with the same key (`retry`), per op type. Parsing and checking only:
//! nothing here runs a command (that is [`super::run`]).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::domain::Declarations;
use crate::error::{Error, Result};

/// Timeout of an action whose receiver gives no `timeout_s`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Actions run at once when the file gives no `concurrency`.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// The entry used for an op type that has none of its own.
pub const DEFAULT_ENTRY: &str = "*";

/// Longest `timeout_s` accepted: a lookup that may take more than an hour
/// is a typo, and a console waiting on it would look hung.
const MAX_TIMEOUT_S: f64 = 3600.0;
/// Most actions at once: each is a process and three threads.
const MAX_CONCURRENCY: i64 = 64;

/// The receivers, as read from one file (or none: every lookup is then
/// unknown and every retry fails, saying why).
#[derive(Debug, Clone, PartialEq)]
pub struct Receivers {
    /// The file they came from; `None` when no file is configured.
    pub source: Option<PathBuf>,
    /// How many actions run at once ([`super::lookup_all`]; the worker may
    /// use it as its default).
    pub concurrency: usize,
    by_type: BTreeMap<String, Receiver>,
    /// The contracts the file declares (`idempotent`, `key_retention_s`).
    declarations: Declarations,
}

/// What to run for one op type.
#[derive(Debug, Clone, PartialEq)]
pub struct Receiver {
    pub lookup: Option<Action>,
    pub retry: Option<Action>,
    /// Lists the ids of every effect the receiver holds for
    /// `SETTLE_ACCOUNT`, one a line: how a drill counts effects no key
    /// lookup can see.
    pub effects: Option<Action>,
    /// The `retry` honours `SETTLE_DRILL_FAULT` (`before_effect`,
    /// `after_effect`, `delay_ms=N`), so a drill may inject faults.
    pub faults: bool,
}

/// One command: a program and its arguments, run directly (no shell), and
/// how long it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Never empty; `argv[0]` is the program (looked up in `PATH` when it
    /// has no slash).
    pub argv: Vec<String>,
    pub timeout: Duration,
}

impl Action {
    /// The command as one line for a person: arguments that need it are
    /// quoted the way a POSIX shell reads them, so it can be pasted to run
    /// by hand. Not sanitised: the caller prints it through `text`.
    pub fn display(&self) -> String {
        self.argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The file's shape. Unknown keys are refused, so `timout_s` is an error
/// with its line rather than a silent 10 s default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    concurrency: Option<Spanned<i64>>,
    #[serde(default)]
    receivers: BTreeMap<String, RawReceiver>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReceiver {
    lookup: Option<Spanned<Vec<String>>>,
    retry: Option<Spanned<Vec<String>>>,
    effects: Option<Spanned<Vec<String>>>,
    faults: Option<Spanned<bool>>,
    timeout_s: Option<Spanned<f64>>,
    // Read as any value so a wrong type is told with the op type and the
    // field, not as serde's "invalid type".
    idempotent: Option<Spanned<toml::Value>>,
    key_retention_s: Option<Spanned<toml::Value>>,
}

const HINT: &str = "see the receivers section of the README: \
    [receivers.OP_TYPE] with lookup = [\"program\", \"arg\"], retry = [...], \
    effects = [...], faults = true, timeout_s = 10, idempotent = true, key_retention_s = 86400";

impl Receivers {
    /// No file: every lookup is unknown, every retry fails, and both say
    /// how to configure one.
    pub fn none() -> Receivers {
        Receivers {
            source: None,
            concurrency: DEFAULT_CONCURRENCY,
            by_type: BTreeMap::new(),
            declarations: Declarations::default(),
        }
    }

    /// The configured file ([`crate::cli::config::Config::receivers`]), or
    /// [`Receivers::none`] when there is none.
    pub fn load_configured(path: Option<&Path>) -> Result<Receivers> {
        path.map_or_else(|| Ok(Receivers::none()), Receivers::load)
    }

    /// Reads and checks `path`. A missing file, bad TOML, an unknown key, an
    /// empty command or a timeout out of range is an error naming the file,
    /// the line and what to write instead.
    pub fn load(path: &Path) -> Result<Receivers> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Receivers {
            path: path.to_path_buf(),
            position: None,
            problem: format!("cannot read the receivers file: {e}"),
            hint: "check the path given to --receivers, or write settle/receivers.toml \
                   under $XDG_CONFIG_HOME (~/.config)"
                .to_string(),
        })?;
        Receivers::parse(path, &text)
    }

    /// The contracts the configured file declares (none: empty), for a
    /// ledger to judge on ([`crate::store::Ledger::declare`]).
    pub fn declarations_in(path: Option<&Path>) -> Result<Declarations> {
        Ok(Receivers::load_configured(path)?.declarations)
    }

    /// [`Receivers::load`] on text already read; `path` is for messages.
    pub fn parse(path: &Path, text: &str) -> Result<Receivers> {
        let bad = |span: Option<Range<usize>>, problem: String| Error::Receivers {
            path: path.to_path_buf(),
            position: span.map(|s| crate::text::line_col(text, s.start)),
            problem,
            hint: HINT.to_string(),
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|e| bad(e.span(), e.message().trim().to_string()))?;
        let concurrency = match raw.concurrency {
            None => DEFAULT_CONCURRENCY,
            Some(c) if (1..=MAX_CONCURRENCY).contains(c.get_ref()) => *c.get_ref() as usize,
            Some(c) => {
                return Err(bad(
                    Some(c.span()),
                    format!(
                        "concurrency must be 1 to {MAX_CONCURRENCY}, not {}",
                        c.get_ref()
                    ),
                ));
            }
        };
        let mut by_type = BTreeMap::new();
        let mut declarations = Declarations::new(path.display().to_string());
        for (op_type, r) in raw.receivers {
            let (idempotent, retention) = declared(&op_type, r.idempotent, r.key_retention_s)
                .map_err(|(span, why)| bad(Some(span), why))?;
            declarations.declare(&op_type, idempotent, retention);
            let timeout = match r.timeout_s {
                None => DEFAULT_TIMEOUT,
                Some(t) if *t.get_ref() > 0.0 && *t.get_ref() <= MAX_TIMEOUT_S => {
                    Duration::from_secs_f64(*t.get_ref())
                }
                Some(t) => {
                    return Err(bad(
                        Some(t.span()),
                        format!(
                            "receivers.{op_type}.timeout_s must be more than 0 and at most \
                             {MAX_TIMEOUT_S} seconds, not {}",
                            t.get_ref()
                        ),
                    ));
                }
            };
            let action = |argv: Option<Spanned<Vec<String>>>, name: &str| match argv {
                None => Ok(None),
                Some(a) if a.get_ref().first().is_some_and(|p| !p.trim().is_empty()) => {
                    Ok(Some(Action {
                        argv: a.into_inner(),
                        timeout,
                    }))
                }
                Some(a) => Err(bad(
                    Some(a.span()),
                    format!(
                        "receivers.{op_type}.{name} needs a program: a list such as \
                         [\"/usr/local/bin/tool\", \"{name}\"] (for a shell: [\"sh\", \"-c\", \"...\"])"
                    ),
                )),
            };
            let faults = faults(r.faults, r.retry.is_some(), &op_type)
                .map_err(|(span, why)| bad(Some(span), why))?;
            let receiver = Receiver {
                lookup: action(r.lookup, "lookup")?,
                retry: action(r.retry, "retry")?,
                effects: action(r.effects, "effects")?,
                faults,
            };
            by_type.insert(op_type, receiver);
        }
        Ok(Receivers {
            source: Some(path.to_path_buf()),
            concurrency,
            by_type,
            declarations,
        })
    }

    /// The entry for `op_type`: its own, else `"*"`. An entry is used
    /// whole: a type with only a `lookup` has no `retry`, even when `"*"`
    /// has one, so what runs for a type is read in one place of the file.
    pub fn receiver(&self, op_type: &str) -> Option<&Receiver> {
        self.by_type
            .get(op_type)
            .or_else(|| self.by_type.get(DEFAULT_ENTRY))
    }

    /// The contracts the file declares per op type, which the decision
    /// rules merge with the ledger's `op_types`.
    pub fn declarations(&self) -> &Declarations {
        &self.declarations
    }

    /// Why `op_type` has no `what` action, for an unknown lookup or a
    /// failed retry.
    pub(super) fn missing(&self, op_type: &str, what: &str) -> String {
        match &self.source {
            None => format!(
                "no receivers file: write settle/receivers.toml under $XDG_CONFIG_HOME \
                 (~/.config) or pass --receivers FILE to configure a {what}"
            ),
            Some(path) => format!(
                "{}: no {what} for op type {op_type} (nor under [receivers.\"*\"])",
                path.display()
            ),
        }
    }
}

/// `faults = true` asks for a retry to inject them into; the span and the
/// problem otherwise.
fn faults(
    faults: Option<Spanned<bool>>,
    has_retry: bool,
    op_type: &str,
) -> std::result::Result<bool, (Range<usize>, String)> {
    match faults {
        Some(f) if *f.get_ref() && !has_retry => Err((
            f.span(),
            format!(
                "receivers.{op_type}.faults = true needs a retry: faults are injected into the \
                 retry command (SETTLE_DRILL_FAULT)"
            ),
        )),
        f => Ok(f.is_some_and(|f| f.into_inner())),
    }
}

/// A value's span in the file and what is wrong with it.
type Bad = (Range<usize>, String);

/// What an entry declares of its op type's contract: `idempotent` a
/// boolean, `key_retention_s` a whole number of seconds, 0 or more; the
/// span and the problem otherwise. The `"*"` entry declares none: one word
/// there would make every unlisted op type safe to retry.
fn declared(
    op_type: &str,
    idempotent: Option<Spanned<toml::Value>>,
    retention: Option<Spanned<toml::Value>>,
) -> std::result::Result<(Option<bool>, Option<i64>), Bad> {
    let field = |name: &str| format!("receivers.{op_type}.{name}");
    if op_type == DEFAULT_ENTRY
        && let Some(v) = idempotent.as_ref().or(retention.as_ref())
    {
        return Err((
            v.span(),
            "receivers.\"*\" cannot declare a contract (idempotent, key_retention_s): \
             declare it under each op type's own [receivers.OP_TYPE]"
                .to_string(),
        ));
    }
    let idempotent = match idempotent {
        None => None,
        Some(v) => match v.get_ref() {
            toml::Value::Boolean(b) => Some(*b),
            other => {
                return Err((
                    v.span(),
                    format!(
                        "{} must be true or false, not {} {other}",
                        field("idempotent"),
                        other.type_str()
                    ),
                ));
            }
        },
    };
    let retention = match retention {
        None => None,
        Some(v) => match v.get_ref() {
            toml::Value::Integer(n) if *n >= 0 => Some(*n),
            other => {
                return Err((
                    v.span(),
                    format!(
                        "{} must be a whole number of seconds, 0 or more, not {} {other}",
                        field("key_retention_s"),
                        other.type_str()
                    ),
                ));
            }
        },
    };
    Ok((idempotent, retention))
}

/// `arg` as a POSIX shell reads it back: bare when only safe characters,
/// else in single quotes.
fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Receivers> {
        Receivers::parse(Path::new("/etc/r.toml"), text)
    }

    #[test]
    fn an_op_type_uses_its_own_entry_else_the_default() {
        let r = parse(
            r#"
            concurrency = 2
            [receivers.place_order]
            lookup = ["/bin/tool", "lookup"]
            timeout_s = 2.5
            [receivers."*"]
            lookup = ["other"]
            retry = ["other", "retry"]
            "#,
        )
        .unwrap();
        assert_eq!(r.concurrency, 2);
        let own = r.receiver("place_order").unwrap();
        assert_eq!(own.lookup.as_ref().unwrap().argv, ["/bin/tool", "lookup"]);
        assert_eq!(
            own.lookup.as_ref().unwrap().timeout,
            Duration::from_millis(2500)
        );
        assert_eq!(own.retry, None, "an entry is used whole");
        let other = r.receiver("refund").unwrap();
        assert_eq!(other.lookup.as_ref().unwrap().timeout, DEFAULT_TIMEOUT);
        assert_eq!(other.retry.as_ref().unwrap().argv, ["other", "retry"]);
    }

    #[test]
    fn without_a_default_an_unlisted_type_has_no_receiver() {
        let r = parse("[receivers.a]\nlookup = [\"x\"]\n").unwrap();
        assert!(r.receiver("b").is_none());
        assert_eq!(r.concurrency, DEFAULT_CONCURRENCY);
        assert!(r.missing("b", "lookup").contains("/etc/r.toml"));
        assert!(
            Receivers::none()
                .missing("b", "lookup")
                .contains("--receivers")
        );
    }

    #[test]
    fn a_misspelt_key_is_refused_with_its_line() {
        let e = parse("[receivers.a]\nlookup = [\"x\"]\ntimout_s = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:3:"), "{e}");
        assert!(e.contains("timout_s"), "{e}");
        assert!(e.contains("what to do"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key_and_line() {
        let e = parse("[receivers.a]\nlookup = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:2:"), "{e}");
        assert!(e.contains("receivers.a.lookup needs a program"), "{e}");
        let e = parse("[receivers.a]\n\ntimeout_s = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:3:"), "{e}");
        assert!(e.contains("timeout_s"), "{e}");
        let e = parse("concurrency = 0\n").unwrap_err().to_string();
        assert!(e.contains("concurrency must be 1 to 64"), "{e}");
        let e = parse("[receivers.a]\nlookup = \"tool lookup\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:2:"), "{e}");
    }

    #[test]
    fn effects_and_faults_are_read_and_checked_per_op_type() {
        let r = parse(
            "[receivers.place_order]\nretry = [\"t\", \"retry\"]\n\
             effects = [\"t\", \"effects\"]\nfaults = true\n",
        )
        .unwrap();
        let own = r.receiver("place_order").unwrap();
        assert_eq!(own.effects.as_ref().unwrap().argv, ["t", "effects"]);
        assert!(own.faults);
        let plain = parse("[receivers.a]\nretry = [\"t\"]\n").unwrap();
        assert!(!plain.receiver("a").unwrap().faults);
        assert!(plain.receiver("a").unwrap().effects.is_none());

        let e = parse("[receivers.place_order]\nlookup = [\"t\"]\nfaults = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:3:"), "{e}");
        assert!(e.contains("receivers.place_order.faults"), "{e}");
        let e = parse("[receivers.place_order]\neffects = []\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("receivers.place_order.effects needs a program"),
            "{e}"
        );
        let e = parse("[receivers.place_order]\nretry = [\"t\"]\nfaults = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/r.toml:3:"), "{e}");
    }

    #[test]
    fn a_contract_is_declared_per_op_type_and_checked() {
        let r = parse(
            "[receivers.send]\nretry = [\"t\"]\nidempotent = true\nkey_retention_s = 86400\n\
             [receivers.plain]\nlookup = [\"t\"]\n",
        )
        .unwrap();
        let send = r.declarations().of("send").unwrap();
        assert_eq!(send.source, "/etc/r.toml");
        assert_eq!(
            (send.idempotent, send.key_retention_s),
            (Some(true), Some(86400))
        );
        assert_eq!(r.declarations().of("plain"), None);

        for (text, line, field) in [
            (
                "[receivers.send]\nidempotent = \"yes\"\n",
                2,
                "receivers.send.idempotent",
            ),
            (
                "[receivers.send]\n\nkey_retention_s = -1\n",
                3,
                "receivers.send.key_retention_s",
            ),
            (
                "[receivers.send]\nkey_retention_s = 1.5\n",
                2,
                "receivers.send.key_retention_s",
            ),
            (
                "[receivers.\"*\"]\nidempotent = true\n",
                2,
                "receivers.\"*\" cannot declare",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("/etc/r.toml:{line}:")), "{e}");
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn a_missing_file_says_what_to_do() {
        let e = Receivers::load(Path::new("/nonexistent/receivers.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/receivers.toml"), "{e}");
        assert!(e.contains("--receivers"), "{e}");
    }

    #[test]
    fn the_display_can_be_pasted_into_a_shell() {
        let a = Action {
            argv: vec![
                "/bin/tool".into(),
                "it's".into(),
                "a b".into(),
                "k=v".into(),
            ],
            timeout: DEFAULT_TIMEOUT,
        };
        assert_eq!(a.display(), r"/bin/tool 'it'\''s' 'a b' k=v");
    }
}
