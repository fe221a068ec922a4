//! The filter language shared by `settle list --filter` and the console's `/`:
//!
//! ```text
//! state:unknown,exhausted  account:acme-*  type:create_report  key:k-123
//! attempts>2  err:timeout  "free text"
//! ```
//!
//! Terms are ANDed; the values of one qualifier (comma-separated or repeated)
//! are ORed; a value with spaces is quoted (`err:"connection reset"`). `*`
//! in `account:`, `type:` and `key:` is a wildcard, otherwise they match
//! exactly. `err:` matches attempt errors as a substring; free text
//! matches account, op type, key or result id as a substring. Parsing is pure:
//! this module only says what was asked; `store` turns it into parameterised
//! SQL.

use crate::domain::State;
use crate::error::{Error, Result};

/// A parsed filter. The default matches every operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Only the triage queue of the contract (unknown, exhausted, conflict,
    /// stale reserved).
    pub queue: bool,
    /// Each term is one list of alternatives (`state:unknown,exhausted`);
    /// the terms must all hold, so `state:unknown state:exhausted` matches
    /// nothing, as `and` promises.
    pub states: Vec<Vec<State>>,
    pub accounts: Vec<Vec<Pattern>>,
    pub op_types: Vec<Vec<Pattern>>,
    pub keys: Vec<Vec<Pattern>>,
    pub attempts: Vec<(Cmp, i64)>,
    pub errors: Vec<String>,
    pub text: Vec<String>,
    /// `ledger:NAME[,NAME]`: which ledgers of a group to read (names may
    /// hold `*`). A group reads only the ledgers every term names, each
    /// with the rest of the query ([`Query::for_ledger`]); one ledger has
    /// no name to match, so there it matches nothing.
    pub ledgers: Vec<Vec<Pattern>>,
}

/// How a qualifier's value matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    Exact(String),
    /// The value contained `*`; the string is the value with `*` kept.
    Glob(String),
}

impl Pattern {
    fn new(value: &str) -> Pattern {
        if value.contains('*') {
            Pattern::Glob(value.to_string())
        } else {
            Pattern::Exact(value.to_string())
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

impl Cmp {
    pub fn sql(self) -> &'static str {
        match self {
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Eq => "=",
        }
    }
}

const HELP: &str =
    "qualifiers: state:S[,S] account:A type:T key:K attempts>N err:TEXT ledger:NAME, or free text";

impl Query {
    /// The triage queue, nothing else.
    pub fn queue() -> Query {
        Query {
            queue: true,
            ..Query::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Query::default()
    }

    /// Parses `input` into a query. Errors name the term and list what is
    /// accepted.
    pub fn parse(input: &str) -> Result<Query> {
        let mut q = Query::default();
        for term in split_terms(input)? {
            q.add_term(&term)?;
        }
        Ok(q)
    }

    /// This query with the terms of `other` added (both must hold).
    pub fn and(mut self, other: Query) -> Query {
        self.queue |= other.queue;
        self.states.extend(other.states);
        self.accounts.extend(other.accounts);
        self.op_types.extend(other.op_types);
        self.keys.extend(other.keys);
        self.attempts.extend(other.attempts);
        self.errors.extend(other.errors);
        self.text.extend(other.text);
        self.ledgers.extend(other.ledgers);
        self
    }

    /// What the ledger of a group named `name` is asked: this query
    /// without its `ledger:` terms, or None when a term leaves it out.
    pub fn for_ledger(&self, name: &str) -> Option<Query> {
        self.picks(name).then(|| self.without_ledgers())
    }

    /// Whether every `ledger:` term names the ledger `name`.
    pub fn picks(&self, name: &str) -> bool {
        let named = |p: &Pattern| match p {
            Pattern::Exact(v) => v == name,
            Pattern::Glob(g) => glob_matches(g, name),
        };
        self.ledgers.iter().all(|term| term.iter().any(named))
    }

    /// This query without its `ledger:` terms.
    pub fn without_ledgers(&self) -> Query {
        Query {
            ledgers: Vec::new(),
            ..self.clone()
        }
    }

    fn add_term(&mut self, term: &Term) -> Result<()> {
        let Term { text, quoted } = term;
        if *quoted {
            self.text.push(text.clone());
            return Ok(());
        }
        if let Some(rest) = text.strip_prefix("attempts") {
            let (cmp, number) = parse_comparison(rest).ok_or_else(|| {
                Error::Usage(format!(
                    "filter: {text:?}: attempts needs a comparison and a number, e.g. attempts>2"
                ))
            })?;
            self.attempts.push((cmp, number));
            return Ok(());
        }
        let Some((name, value)) = text.split_once(':') else {
            self.text.push(text.clone());
            return Ok(());
        };
        // `10:15` and `https://…` are text, not qualifiers.
        if !name.chars().all(|c| c.is_ascii_alphabetic())
            || name.is_empty()
            || value.starts_with('/')
        {
            self.text.push(text.clone());
            return Ok(());
        }
        let values = || value.split(',').map(str::trim).filter(|v| !v.is_empty());
        // `account:,` names no account: an empty group would match nothing
        // (or, in SQL, be no condition at all). `err:` searches its text.
        let listed = matches!(name, "err" | "error") || values().next().is_some();
        if value.trim().is_empty() || !listed {
            return Err(Error::Usage(format!(
                "filter: {name}: needs a value ({HELP})"
            )));
        }
        match name {
            "state" | "s" => {
                let mut states = Vec::new();
                for v in values() {
                    if v == "queue" {
                        self.queue = true;
                        continue;
                    }
                    let state = State::parse_known(v).ok_or_else(|| {
                        Error::Usage(format!(
                            "filter: unknown state {v:?}; states are {} (or queue)",
                            State::KNOWN
                                .iter()
                                .map(State::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                    states.push(state);
                }
                // `state:queue` alone adds the queue term and no state term.
                if !states.is_empty() {
                    self.states.push(states);
                }
            }
            "account" | "acct" => self.accounts.push(values().map(Pattern::new).collect()),
            "type" | "op_type" => self.op_types.push(values().map(Pattern::new).collect()),
            "key" => self.keys.push(values().map(Pattern::new).collect()),
            "err" | "error" => self.errors.push(value.to_string()),
            "ledger" => self.ledgers.push(values().map(Pattern::new).collect()),
            other => {
                return Err(Error::Usage(format!(
                    "filter: unknown qualifier {other:?} ({HELP})"
                )));
            }
        }
        Ok(())
    }
}

/// Whether `text` matches `glob`, where `*` stands for any run of
/// characters (as the SQL of the other qualifiers reads it).
fn glob_matches(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

fn parse_comparison(rest: &str) -> Option<(Cmp, i64)> {
    let (cmp, number) = if let Some(n) = rest.strip_prefix(">=") {
        (Cmp::Ge, n)
    } else if let Some(n) = rest.strip_prefix("<=") {
        (Cmp::Le, n)
    } else if let Some(n) = rest.strip_prefix('>') {
        (Cmp::Gt, n)
    } else if let Some(n) = rest.strip_prefix('<') {
        (Cmp::Lt, n)
    } else if let Some(n) = rest.strip_prefix(':').or_else(|| rest.strip_prefix('=')) {
        (Cmp::Eq, n)
    } else {
        return None;
    };
    number.trim().parse().ok().map(|n| (cmp, n))
}

struct Term {
    text: String,
    quoted: bool,
}

/// Splits on whitespace; `"..."` keeps spaces and is always free text.
fn split_terms(input: &str) -> Result<Vec<Term>> {
    let mut terms = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '"' {
            chars.next();
            let mut text = String::new();
            read_quoted(&mut chars, &mut text)?;
            terms.push(Term { text, quoted: true });
            continue;
        }
        let mut text = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            // `err:"connection reset"`: a qualifier's value may be quoted
            // to hold spaces (the Clusters view writes such terms).
            if c == '"' && text.ends_with(':') {
                read_quoted(&mut chars, &mut text)?;
                continue;
            }
            text.push(c);
        }
        terms.push(Term {
            text,
            quoted: false,
        });
    }
    Ok(terms)
}

/// Reads up to the closing `"` (just after an opening one) into `text`.
fn read_quoted(chars: &mut impl Iterator<Item = char>, text: &mut String) -> Result<()> {
    for c in chars.by_ref() {
        if c == '"' {
            return Ok(());
        }
        text.push(c);
    }
    Err(Error::Usage("filter: a quote is not closed".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_and_free_text() {
        let q = Query::parse(
            r#"state:unknown,exhausted account:acme-* attempts>2 err:timeout "weekly sales" k-1"#,
        )
        .unwrap();
        assert_eq!(q.states, vec![vec![State::Unknown, State::Exhausted]]);
        assert_eq!(q.accounts, vec![vec![Pattern::Glob("acme-*".into())]]);
        assert_eq!(q.attempts, vec![(Cmp::Gt, 2)]);
        assert_eq!(q.errors, vec!["timeout".to_string()]);
        assert_eq!(q.text, vec!["weekly sales".to_string(), "k-1".to_string()]);
    }

    #[test]
    fn ledger_terms_pick_a_groups_ledgers_and_leave_the_rest_of_the_query() {
        let q = Query::parse("ledger:pay,bill-* state:unknown").unwrap();
        let pay = q.for_ledger("pay").unwrap();
        assert!(pay.ledgers.is_empty());
        assert_eq!(pay.states, vec![vec![State::Unknown]]);
        assert!(q.for_ledger("bill-eu").is_some());
        assert!(q.for_ledger("ship").is_none());
        assert!(q.for_ledger("paying").is_none());
        // Every term must name it.
        let both = Query::parse("ledger:pay ledger:ship").unwrap();
        assert!(both.for_ledger("pay").is_none());
        assert!(Query::default().for_ledger("any").is_some());
        for (glob, text, matches) in [
            ("*", "", true),
            ("a*c", "abc", true),
            ("a*c", "ac", true),
            ("a*c", "acb", false),
            ("*b*", "abc", true),
            ("ab*ab", "ab", false),
        ] {
            assert_eq!(glob_matches(glob, text), matches, "{glob} {text}");
        }
    }

    #[test]
    fn bad_terms_say_what_is_accepted() {
        let e = Query::parse("state:bogus").unwrap_err().to_string();
        assert!(
            e.contains("unknown state \"bogus\"") && e.contains("exhausted"),
            "{e}"
        );
        let e = Query::parse("colour:red").unwrap_err().to_string();
        assert!(
            e.contains("unknown qualifier") && e.contains("account:"),
            "{e}"
        );
        assert!(Query::parse("attempts>x").is_err());
        assert!(Query::parse("\"open").is_err());
    }

    #[test]
    fn separate_terms_must_all_hold_commas_are_alternatives() {
        let q = Query::parse("key:a,b key:c*").unwrap();
        assert_eq!(
            q.keys,
            vec![
                vec![Pattern::Exact("a".into()), Pattern::Exact("b".into())],
                vec![Pattern::Glob("c*".into())]
            ]
        );
        let both = Query::parse("state:unknown")
            .unwrap()
            .and(Query::parse("state:exhausted").unwrap());
        assert_eq!(both.states.len(), 2, "two terms, both must hold");
    }

    #[test]
    fn urls_and_times_are_free_text() {
        let q = Query::parse("https://x 10:15").unwrap();
        assert_eq!(q.text.len(), 2);
    }

    #[test]
    fn empty_is_everything() {
        assert!(Query::parse("   ").unwrap().is_empty());
        for empty in ["account:,", "type: , ", "key:,,", "state:,"] {
            assert!(Query::parse(empty).is_err(), "{empty}");
        }
    }

    #[test]
    fn a_quoted_value_keeps_its_spaces() {
        let quoted = Query::parse(r#"err:"connection reset" type:x"#).unwrap();
        assert_eq!(quoted.errors, vec!["connection reset".to_string()]);
        assert!(quoted.text.is_empty());
        assert!(Query::parse(r#"err:"open"#).is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,60}") {
            let _ = Query::parse(&s);
        }
    }
}
