//! The contract an operator declares for an op type in a file they own
//! (the receivers file), for ledgers whose writer cannot say it: a job
//! queue's engine knows nothing of idempotency or key retention. Where the
//! ledger's `op_types` row declares it too and the two disagree, the
//! stricter wins: not idempotent beats idempotent, the shorter retention
//! beats the longer. Pure.

use std::collections::BTreeMap;

/// A receiver's contract: a row of `op_types`, or the one the rules hold an
/// operation to once the receivers file's declaration is merged in.
#[derive(Debug, Clone, PartialEq)]
pub struct OpTypeContract {
    pub op_type: String,
    pub idempotent: bool,
    pub key_retention_s: Option<i64>,
    pub description: Option<String>,
}

/// What the file says of one op type; a field it leaves out says nothing
/// (the other declaration, if any, stands).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileContract {
    /// The file, as the user named it.
    pub source: String,
    pub idempotent: Option<bool>,
    pub key_retention_s: Option<i64>,
}

/// Every op type's declaration in one file; empty when no file declares
/// any (nothing then changes: `op_types` alone is the contract).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declarations {
    source: String,
    by_type: BTreeMap<String, (Option<bool>, Option<i64>)>,
}

impl Declarations {
    /// `source` as the user named the file.
    pub fn new(source: impl Into<String>) -> Declarations {
        Declarations {
            source: source.into(),
            by_type: BTreeMap::new(),
        }
    }

    /// Adds `op_type`'s declaration; one without either field declares
    /// nothing and is left out.
    pub fn declare(&mut self, op_type: &str, idempotent: Option<bool>, retention: Option<i64>) {
        if idempotent.is_some() || retention.is_some() {
            self.by_type
                .insert(op_type.to_string(), (idempotent, retention));
        }
    }

    /// What the file declares for `op_type`, if anything.
    pub fn of(&self, op_type: &str) -> Option<FileContract> {
        let (idempotent, key_retention_s) = *self.by_type.get(op_type)?;
        Some(FileContract {
            source: self.source.clone(),
            idempotent,
            key_retention_s,
        })
    }
}

/// The contract the rules hold an operation to: the row's, the file's, or
/// the stricter of each field where both declare it. A file that leaves
/// `idempotent` out, with no row, declares it not idempotent: a retry is
/// allowed only on a word that it is safe.
pub fn merged(
    op_type: &str,
    row: Option<&OpTypeContract>,
    file: Option<&FileContract>,
) -> Option<OpTypeContract> {
    let Some(file) = file else {
        return row.cloned();
    };
    let shorter = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Some(match row {
        None => OpTypeContract {
            op_type: op_type.to_string(),
            idempotent: file.idempotent.unwrap_or(false),
            key_retention_s: file.key_retention_s,
            description: None,
        },
        Some(row) => OpTypeContract {
            idempotent: row.idempotent && file.idempotent.unwrap_or(true),
            key_retention_s: shorter(row.key_retention_s, file.key_retention_s),
            ..row.clone()
        },
    })
}

/// Who declared the contract, for the contract line: `None` when nobody
/// did. "op_types", "FILE", "op_types and by FILE" when they agree, and
/// "op_types and by FILE; the stricter is used" when a field the file
/// declares differs from the row's.
pub fn declared_by(row: Option<&OpTypeContract>, file: Option<&FileContract>) -> Option<String> {
    match (row, file) {
        (None, None) => None,
        (Some(_), None) => Some("op_types".to_string()),
        (None, Some(f)) => Some(f.source.clone()),
        (Some(row), Some(f)) => {
            let differs = f.idempotent.is_some_and(|i| i != row.idempotent)
                || f.key_retention_s
                    .is_some_and(|s| Some(s) != row.key_retention_s);
            let stricter = if differs {
                "; the stricter is used"
            } else {
                ""
            };
            Some(format!("op_types and by {}{stricter}", f.source))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(idempotent: bool, retention: Option<i64>) -> OpTypeContract {
        OpTypeContract {
            op_type: "t".into(),
            idempotent,
            key_retention_s: retention,
            description: Some("from the row".into()),
        }
    }

    fn file(idempotent: Option<bool>, retention: Option<i64>) -> FileContract {
        FileContract {
            source: "r.toml".into(),
            idempotent,
            key_retention_s: retention,
        }
    }

    #[test]
    fn the_file_alone_is_the_contract_and_says_so() {
        let f = file(Some(true), Some(60));
        let c = merged("t", None, Some(&f)).unwrap();
        assert!(c.idempotent);
        assert_eq!(c.key_retention_s, Some(60));
        assert_eq!(declared_by(None, Some(&f)).as_deref(), Some("r.toml"));
        // Retention alone declares nothing about idempotency: not safe.
        let c = merged("t", None, Some(&file(None, Some(60)))).unwrap();
        assert!(!c.idempotent);
    }

    #[test]
    fn without_the_file_the_row_stands_unchanged() {
        let r = row(true, Some(60));
        assert_eq!(merged("t", Some(&r), None), Some(r.clone()));
        assert_eq!(merged("t", None, None), None);
        assert_eq!(declared_by(Some(&r), None).as_deref(), Some("op_types"));
        assert_eq!(declared_by(None, None), None);
    }

    #[test]
    fn where_both_declare_the_stricter_field_wins() {
        // Not idempotent beats idempotent, whichever says it.
        for (r, f) in [(true, false), (false, true)] {
            let c = merged("t", Some(&row(r, None)), Some(&file(Some(f), None))).unwrap();
            assert!(!c.idempotent, "row {r}, file {f}");
        }
        // The shorter retention wins; an unlimited one is the longest.
        let c = merged(
            "t",
            Some(&row(true, Some(600))),
            Some(&file(None, Some(60))),
        )
        .unwrap();
        assert_eq!(c.key_retention_s, Some(60));
        assert!(
            c.idempotent,
            "a file silent on idempotency leaves the row's"
        );
        let c = merged("t", Some(&row(true, None)), Some(&file(None, Some(60)))).unwrap();
        assert_eq!(c.key_retention_s, Some(60));
        let c = merged(
            "t",
            Some(&row(true, Some(60))),
            Some(&file(Some(true), None)),
        )
        .unwrap();
        assert_eq!(c.key_retention_s, Some(60));
        assert_eq!(c.description.as_deref(), Some("from the row"));
    }

    #[test]
    fn the_line_says_both_and_whether_they_disagree() {
        let r = row(true, Some(60));
        let agree = declared_by(Some(&r), Some(&file(Some(true), None)));
        assert_eq!(agree.as_deref(), Some("op_types and by r.toml"));
        for f in [file(Some(false), None), file(None, Some(30))] {
            let both = declared_by(Some(&r), Some(&f));
            assert_eq!(
                both.as_deref(),
                Some("op_types and by r.toml; the stricter is used"),
                "{f:?}"
            );
        }
    }

    #[test]
    fn an_entry_declaring_nothing_is_no_declaration() {
        let mut d = Declarations::new("r.toml");
        d.declare("quiet", None, None);
        d.declare("loud", Some(true), None);
        assert_eq!(d.of("quiet"), None);
        assert_eq!(d.of("loud"), Some(file(Some(true), None)));
        assert_eq!(Declarations::default().of("loud"), None);
    }
}
