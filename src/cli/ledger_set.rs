//! Several ledgers read as one (one incident, many services): each LEDGER
//! with the name its rows carry, and the `NAME:ID` that says which
//! ledger's operation an id means. Naming and splitting only; opening and
//! reading them is the commands'.

use std::path::PathBuf;

/// One ledger of a set, with the name that tells it from the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its `@NAME`, else [`crate::store::short_name`] of its address, with
    /// `-2`, `-3`, … after a name an earlier member already has.
    pub name: String,
    /// A SQLite path or a PostgreSQL address, as LEDGER takes it.
    pub address: PathBuf,
    /// The named ledger's receivers file, if it names one.
    pub receivers: Option<PathBuf>,
    /// Why a command may not write to it (a ledger named `read_only =
    /// true`), said when a writing command picks it out of a group.
    pub writes_refused: Option<String>,
}

impl Member {
    /// Refuses a write to a ledger named read-only.
    pub fn writable(&self) -> crate::error::Result<()> {
        match &self.writes_refused {
            Some(why) => Err(crate::error::Error::Usage(why.clone())),
            None => Ok(()),
        }
    }
}

/// The ledgers a command reads, in the order the command line gave them
/// (a group's in its file's order). One member reads and prints as a
/// single ledger always did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerSet {
    pub members: Vec<Member>,
}

impl LedgerSet {
    /// Adds a ledger; `name` is its `@NAME` (None for a plain path or
    /// address). The same named ledger twice (`@a` and a group holding
    /// `a`) is read once.
    pub fn push(&mut self, name: Option<&str>, address: PathBuf, receivers: Option<PathBuf>) {
        self.push_member(name, address, receivers, None);
    }

    /// [`LedgerSet::push`] of a ledger that refuses writes, and why.
    pub fn push_member(
        &mut self,
        name: Option<&str>,
        address: PathBuf,
        receivers: Option<PathBuf>,
        writes_refused: Option<String>,
    ) {
        if let Some(name) = name
            && self.members.iter().any(|m| m.name == name)
        {
            return;
        }
        let base = name
            .map(str::to_string)
            .unwrap_or_else(|| crate::store::short_name(&address));
        let mut name = base.clone();
        let mut n = 1;
        while self.members.iter().any(|m| m.name == name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        self.members.push(Member {
            name,
            address,
            receivers,
            writes_refused,
        });
    }

    /// Whether rows need the ledger's name to be told apart.
    pub fn is_several(&self) -> bool {
        self.members.len() > 1
    }

    /// The names, for messages: `a, b, c`.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
        names.join(", ")
    }

    /// The members `query`'s `ledger:` terms pick, in order.
    pub fn picked(&self, query: &crate::query::Query) -> LedgerSet {
        LedgerSet {
            members: self
                .members
                .iter()
                .filter(|m| query.picks(&m.name))
                .cloned()
                .collect(),
        }
    }

    /// `NAME:ID` split into its member and the id (or account/op_type/key)
    /// that member's ledger resolves; None when the text before the first
    /// `:` is no member's name (a bare id).
    pub fn split<'s>(&self, spec: &'s str) -> Option<(&Member, &'s str)> {
        let (name, id) = spec.split_once(':')?;
        self.members
            .iter()
            .find(|m| m.name == name)
            .map(|m| (m, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_are_named_by_their_stem_and_duplicates_get_a_suffix() {
        let mut set = LedgerSet::default();
        set.push(None, "/srv/a/ledger.db".into(), None);
        set.push(None, "/srv/b/ledger.db".into(), None);
        set.push(Some("pay"), "/srv/pay.db".into(), None);
        set.push(Some("pay"), "/srv/pay.db".into(), None);
        assert_eq!(set.names(), "ledger, ledger-2, pay");
        assert!(set.is_several());
        let (m, id) = set.split("ledger-2:42").unwrap();
        assert_eq!(
            (m.address.to_str().unwrap(), id),
            ("/srv/b/ledger.db", "42")
        );
        assert_eq!(set.split("pay:acme/t/k:1").unwrap().1, "acme/t/k:1");
        assert!(set.split("42").is_none() && set.split("acme:x/t/k").is_none());
    }
}
