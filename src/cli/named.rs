//! Named ledgers: `[ledgers.NAME]` tables in
//! `$XDG_CONFIG_HOME/settle/config.toml`, so an operator who looks after
//! several services types `@payments` instead of an address and a receivers
//! file, the way kubectl has contexts and psql service names. Reading and
//! checking the file only; what a name stands in for is the commands'.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Error, Result};

/// The file's name under `$XDG_CONFIG_HOME/settle/`.
pub const CONFIG_FILE: &str = "config.toml";

const HINT: &str = "each ledger is a table: [ledgers.NAME] with address = \"PATH or postgres://…\" \
     and, optionally, receivers = \"FILE\", drill_dir = \"DIR\", read_only = true, \
     reads = \"primary|standby|auto\"; a group of them is [groups.NAME] with ledgers = [\"a\", \"b\"]";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default)]
    ledgers: BTreeMap<String, Spanned<EntryShape>>,
    #[serde(default)]
    groups: BTreeMap<String, Spanned<GroupShape>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupShape {
    ledgers: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryShape {
    address: Spanned<String>,
    receivers: Option<PathBuf>,
    drill_dir: Option<PathBuf>,
    #[serde(default)]
    read_only: bool,
    reads: Option<Spanned<String>>,
}

/// One `[ledgers.NAME]` table, its paths made absolute against the config
/// file's folder (a file is the same ledger whatever the working folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedLedger {
    pub name: String,
    /// A SQLite path or a PostgreSQL address, as LEDGER takes it.
    pub address: PathBuf,
    /// The receivers file, when `--receivers` is not given.
    pub receivers: Option<PathBuf>,
    /// The console's drill folder, when `--drill-dir` is not given.
    pub drill_dir: Option<PathBuf>,
    /// `read_only = true`: the ledger is only read through this name (the
    /// console opens it read-only; writing commands refuse it).
    pub read_only: bool,
    /// `reads = "…"`: where a PostgreSQL address's reads go, when
    /// `--reads` is not given.
    pub reads: Option<crate::store::postgres::Reads>,
}

/// The named ledgers of one config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledgers {
    /// The file they come from (for messages).
    pub path: PathBuf,
    pub named: Vec<NamedLedger>,
    /// `[groups.NAME] ledgers = ["a", "b"]`: names that stand for several
    /// ledgers at once (one incident, many services), in the file's order.
    pub groups: Vec<(String, Vec<String>)>,
}

impl Ledgers {
    /// The config file under `config_home` (`$XDG_CONFIG_HOME`, else
    /// `~/.config`).
    pub fn file_in(config_home: &Path) -> PathBuf {
        config_home.join("settle").join(CONFIG_FILE)
    }

    /// Reads `path`; a missing file names no ledger.
    pub fn load(path: &Path) -> Result<Ledgers> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ledgers::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ledgers {
                path: path.to_path_buf(),
                named: Vec::new(),
                groups: Vec::new(),
            }),
            Err(source) => Err(Error::Io {
                path: path.to_path_buf(),
                doing: "reading the named ledgers".to_string(),
                source,
            }),
        }
    }

    /// [`Ledgers::load`] on text already read; `path` is for messages and
    /// relative paths. Bad TOML, an unknown field or a missing address is
    /// an error naming the file, the line and the field.
    pub fn parse(path: &Path, text: &str) -> Result<Ledgers> {
        let bad = |span: Option<Range<usize>>, problem: String| {
            let at = span.map_or(String::new(), |s| {
                let (line, col) = crate::text::line_col(text, s.start);
                format!("line {line}, column {col}: ")
            });
            Error::Ledger {
                path: path.to_path_buf(),
                problem: format!("{at}{problem}"),
                hint: HINT.to_string(),
            }
        };
        let shape: FileShape =
            toml::from_str(text).map_err(|e| bad(e.span(), e.message().trim().to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut named = Vec::new();
        for (name, entry) in shape.ledgers {
            let entry = entry.into_inner();
            if entry.address.get_ref().trim().is_empty() {
                let problem = format!("ledgers.{name}: field `address` is empty");
                return Err(bad(Some(entry.address.span()), problem));
            }
            let read_only = entry.read_only;
            let reads = match entry.reads {
                None => None,
                Some(reads) => Some(reads.get_ref().parse().map_err(|why: String| {
                    bad(Some(reads.span()), format!("ledgers.{name}: {why}"))
                })?),
            };
            let address = PathBuf::from(entry.address.into_inner());
            let address = if crate::store::postgres::is_address(&address) {
                address
            } else {
                base.join(address)
            };
            named.push(NamedLedger {
                name,
                address,
                receivers: entry.receivers.map(|p| base.join(p)),
                drill_dir: entry.drill_dir.map(|p| base.join(p)),
                read_only,
                reads,
            });
        }
        let mut groups = Vec::new();
        for (name, group) in shape.groups {
            let span = group.span();
            if named.iter().any(|l| l.name == name) {
                let problem = format!(
                    "groups.{name} has the name of ledgers.{name}: @{name} would mean both"
                );
                return Err(bad(Some(span), problem));
            }
            let mut members = Vec::new();
            for member in group.into_inner().ledgers {
                if !named.iter().any(|l| l.name == *member.get_ref()) {
                    let problem = format!(
                        "groups.{name}: no ledger is named {:?} (a group lists [ledgers.NAME] names)",
                        member.get_ref()
                    );
                    return Err(bad(Some(member.span()), problem));
                }
                members.push(member.into_inner());
            }
            groups.push((name, members));
        }
        Ok(Ledgers {
            path: path.to_path_buf(),
            named,
            groups,
        })
    }

    /// What `@name` stands for: the ledger of that name, or each ledger
    /// of the group of that name; neither is [`Ledgers::get`]'s error.
    pub fn expand(&self, name: &str) -> Result<Vec<&NamedLedger>> {
        match self.groups.iter().find(|(g, _)| g == name) {
            Some((_, members)) => members.iter().map(|m| self.get(m)).collect(),
            None => Ok(vec![self.get(name)?]),
        }
    }

    /// The ledger called `name`; an unknown name is an error naming the
    /// file and the names it has.
    pub fn get(&self, name: &str) -> Result<&NamedLedger> {
        self.named.iter().find(|l| l.name == name).ok_or_else(|| {
            let groups = self.groups.iter().map(|(g, _)| g);
            let known: Vec<String> = (self.named.iter().map(|l| &l.name))
                .chain(groups)
                .map(|n| format!("@{n}"))
                .collect();
            let (problem, hint) = if known.is_empty() {
                (
                    format!("no ledger is named @{name}: the file names none"),
                    format!("add [ledgers.{name}] with address = \"PATH or postgres://…\""),
                )
            } else {
                (
                    format!("no ledger is named @{name}; known: {}", known.join(", ")),
                    format!(
                        "use one of those, or add [ledgers.{name}] (`settle ledgers` lists them)"
                    ),
                )
            };
            Error::Ledger {
                path: self.path.clone(),
                problem,
                hint,
            }
        })
    }
}

impl NamedLedger {
    /// The address as a person may see it: a PostgreSQL address without
    /// its password (as the console's header names it), a path as it is.
    pub fn shown(&self) -> String {
        if crate::store::postgres::is_address(&self.address) {
            match crate::store::postgres::Address::parse(&self.address) {
                Ok(a) => format!("postgres {}", a.shown()),
                Err(_) => "postgres (an address settle cannot read)".to_string(),
            }
        } else {
            self.address.display().to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/home/op/.config/settle/config.toml";

    fn parse(text: &str) -> Result<Ledgers> {
        Ledgers::parse(Path::new(FILE), text)
    }

    #[test]
    fn a_table_per_ledger_with_paths_beside_the_file() {
        let ledgers = parse(
            "[ledgers.demo]\naddress = \"demo/ledger.db\"\nreceivers = \"r.toml\"\n\
             drill_dir = \"/srv/drills\"\n\
             [ledgers.pay]\naddress = \"postgresql://ops:secret@db1/pay\"\nread_only = true\n",
        )
        .unwrap();
        let demo = ledgers.get("demo").unwrap();
        assert_eq!(
            demo.address,
            Path::new("/home/op/.config/settle/demo/ledger.db")
        );
        assert_eq!(
            demo.receivers.as_deref(),
            Some(Path::new("/home/op/.config/settle/r.toml"))
        );
        assert_eq!(demo.drill_dir.as_deref(), Some(Path::new("/srv/drills")));
        assert!(!demo.read_only);
        let pay = ledgers.get("pay").unwrap();
        assert!(pay.read_only);
        assert_eq!(pay.address, Path::new("postgresql://ops:secret@db1/pay"));
        assert!(!pay.shown().contains("secret"), "{}", pay.shown());
        assert!(pay.shown().contains("db1"), "{}", pay.shown());
    }

    #[test]
    fn an_unknown_name_names_the_file_and_the_known_ones() {
        let ledgers =
            parse("[ledgers.a]\naddress = \"a.db\"\n[ledgers.b]\naddress = \"b.db\"\n").unwrap();
        let e = ledgers.get("c").unwrap_err().to_string();
        assert!(
            e.contains(FILE) && e.contains("@c") && e.contains("@a, @b"),
            "{e}"
        );
    }

    #[test]
    fn a_malformed_file_names_the_file_line_and_field() {
        let e = parse("[ledgers.a]\naddress = \"a.db\"\nreceiver = \"r.toml\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(FILE) && e.contains("line 3") && e.contains("receiver"),
            "{e}"
        );
        let e = parse("[ledgers.a]\nreceivers = \"r.toml\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("address"), "{e}");
        let e = parse("[ledgers.a]\naddress = \"a.db\"\nreads = \"all\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("reads=all"), "{e}");
        let ok =
            parse("[ledgers.a]\naddress = \"postgresql:///l?host=/a,/b\"\nreads = \"standby\"\n");
        assert_eq!(
            ok.unwrap().get("a").unwrap().reads,
            Some(crate::store::postgres::Reads::Standby)
        );
    }

    #[test]
    fn a_group_stands_for_its_ledgers_and_may_not_share_a_ledgers_name() {
        let ledgers = parse(
            "[ledgers.a]\naddress = \"a.db\"\n[ledgers.b]\naddress = \"b.db\"\n\
             [groups.inc]\nledgers = [\"b\", \"a\"]\n",
        )
        .unwrap();
        let names: Vec<&str> = ledgers
            .expand("inc")
            .unwrap()
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(ledgers.expand("a").unwrap().len(), 1);
        let e = parse("[ledgers.a]\naddress = \"a.db\"\n[groups.a]\nledgers = [\"a\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(FILE) && e.contains("groups.a") && e.contains("ledgers.a"),
            "{e}"
        );
        let e = parse("[ledgers.a]\naddress = \"a.db\"\n[groups.g]\nledgers = [\"z\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("groups.g") && e.contains("\"z\""), "{e}");
    }

    #[test]
    fn no_file_names_no_ledger() {
        let ledgers = Ledgers::load(Path::new("/nonexistent/settle/config.toml")).unwrap();
        assert!(ledgers.named.is_empty());
    }
}
