//! When the receiver forgets an operation's idempotency key: the earlier of
//! the row's `key_expires_at` and `created_at` plus the contract's
//! `key_retention_s`. One answer for `settle show`, the console's detail and
//! the retry rule, so they cannot disagree. Pure.

use chrono::{DateTime, Duration, Utc};

use super::operation::OperationDetail;
use super::time::{TIME_FORMATS, format_time, human_duration, parse_time};

/// The key's expiry as far as the ledger tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyExpiry {
    /// Neither the row nor the contract sets a limit.
    Never,
    /// The receiver keeps the key until `at`; `why` names the source.
    At { at: DateTime<Utc>, why: String },
    /// A time the expiry depends on does not parse; the text says which.
    Unreadable(String),
}

impl KeyExpiry {
    /// Whether a same-key retry could reach a receiver that forgot the key.
    #[cfg(test)]
    pub fn passed(&self, now: DateTime<Utc>) -> bool {
        match self {
            KeyExpiry::Never => false,
            KeyExpiry::At { at, .. } => *at <= now,
            KeyExpiry::Unreadable(_) => true,
        }
    }
}

/// The earlier of the two limits, with where it comes from.
pub fn key_expiry(detail: &OperationDetail) -> KeyExpiry {
    let op = &detail.operation;
    let mut limits: Vec<(DateTime<Utc>, String)> = Vec::new();
    if let Some(text) = op.key_expires_at.as_deref() {
        match parse_time(text) {
            Some(t) => limits.push((t, "the row's key_expires_at".to_string())),
            None => {
                return KeyExpiry::Unreadable(format!(
                    "key_expires_at {text:?} is not a time ({TIME_FORMATS})"
                ));
            }
        }
    }
    if let Some(retention) = detail.effective_contract().and_then(|c| c.key_retention_s) {
        match parse_time(&op.created_at) {
            Some(created) => limits.push((
                created + Duration::seconds(retention),
                format!(
                    "created {} + contract retention {}",
                    format_time(created),
                    human_duration(retention)
                ),
            )),
            None => {
                return KeyExpiry::Unreadable(format!(
                    "created_at {:?} is not a time ({TIME_FORMATS})",
                    op.created_at
                ));
            }
        }
    }
    match limits.into_iter().min_by_key(|(t, _)| *t) {
        None => KeyExpiry::Never,
        Some((at, why)) => KeyExpiry::At { at, why },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture;
    use crate::domain::operation::Operation;

    fn detail(key_expires_at: Option<&str>, retention: Option<i64>) -> OperationDetail {
        let mut detail = fixture::detail(Operation {
            key_expires_at: key_expires_at.map(str::to_string),
            ..fixture::operation()
        });
        if let Some(contract) = detail.contract.as_mut() {
            contract.key_retention_s = retention;
        }
        detail
    }

    fn at(t: &str) -> DateTime<Utc> {
        parse_time(t).unwrap()
    }

    #[test]
    fn the_contract_retention_wins_when_it_ends_first() {
        // The row says "kept for a week"; the contract keeps keys one day.
        let e = key_expiry(&detail(Some("2026-11-13T10:00:00Z"), Some(86_400)));
        let KeyExpiry::At { at: when, why } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*when, at("2026-11-07T10:00:00Z"));
        assert!(why.contains("retention 1d"), "{why}");
        assert!(!e.passed(at("2026-11-07T09:59:59Z")));
        assert!(e.passed(at("2026-11-07T10:00:00Z")));
    }

    #[test]
    fn the_row_wins_when_it_ends_first() {
        let e = key_expiry(&detail(Some("2026-11-06T12:00:00Z"), Some(86_400)));
        assert!(matches!(e, KeyExpiry::At { at: t, .. } if t == at("2026-11-06T12:00:00Z")));
    }

    #[test]
    fn no_limit_anywhere_means_never() {
        assert_eq!(key_expiry(&detail(None, None)), KeyExpiry::Never);
        assert!(!KeyExpiry::Never.passed(at("2099-01-01T00:00:00Z")));
    }

    #[test]
    fn an_unreadable_time_counts_as_passed() {
        let e = key_expiry(&detail(Some("tomorrow"), None));
        assert!(matches!(&e, KeyExpiry::Unreadable(t) if t.contains("tomorrow")));
        assert!(e.passed(at("2026-11-06T10:00:00Z")));
    }
}
