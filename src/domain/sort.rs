//! The orders an operation list can be read in: a column, a direction, and
//! the key a keyset page seeks from — the row's value in that column and its
//! id, which breaks ties so no row is skipped or shown twice across a page
//! boundary. Vocabulary only: the SQL is in `store`.

use std::fmt;

use super::ids::OperationId;
use super::operation::OperationRow;

/// A column an operation list can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortColumn {
    /// Row id: the order operations were inserted (the default).
    #[default]
    Id,
    Created,
    Updated,
    Attempts,
    Account,
    OpType,
    /// The newest event's name (no event sorts as the empty word).
    LastEvent,
}

impl SortColumn {
    /// Every column, in the order the console's `s` cycles through them.
    pub const ALL: [SortColumn; 7] = [
        SortColumn::Id,
        SortColumn::Created,
        SortColumn::Updated,
        SortColumn::Attempts,
        SortColumn::Account,
        SortColumn::OpType,
        SortColumn::LastEvent,
    ];

    /// The word the CLI takes and the list title shows.
    pub fn as_str(self) -> &'static str {
        match self {
            SortColumn::Id => "id",
            SortColumn::Created => "created",
            SortColumn::Updated => "updated",
            SortColumn::Attempts => "attempts",
            SortColumn::Account => "account",
            SortColumn::OpType => "type",
            SortColumn::LastEvent => "event",
        }
    }

    /// The column after this one, wrapping round.
    pub fn next(self) -> SortColumn {
        let i = Self::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// A list's order. The default, newest id first, is what every list showed
/// before sorting existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub column: SortColumn,
    pub descending: bool,
}

impl Default for Sort {
    fn default() -> Self {
        Sort {
            column: SortColumn::Id,
            descending: true,
        }
    }
}

impl Sort {
    /// `row`'s place in this order: what a page after or before it seeks.
    pub fn key_of(self, row: &OperationRow) -> SortKey {
        let value = match self.column {
            SortColumn::Id => SortValue::Int(row.id.0),
            SortColumn::Created => SortValue::Text(row.created_at.clone()),
            SortColumn::Updated => SortValue::Text(row.updated_at.clone()),
            SortColumn::Attempts => SortValue::Int(row.attempts),
            SortColumn::Account => SortValue::Text(row.account.clone()),
            SortColumn::OpType => SortValue::Text(row.op_type.clone()),
            SortColumn::LastEvent => SortValue::Text(row.last_event.clone().unwrap_or_default()),
        };
        SortKey { value, id: row.id }
    }
}

impl Sort {
    /// Which of two rows' keys comes first in this order, as the ledger
    /// orders them: the value, then the id, both in the sort's direction
    /// (text by its bytes, as `COLLATE "C"` and SQLite compare it). Merging
    /// several ledgers' pages by it gives the order one ledger would.
    pub fn compare(self, a: &SortKey, b: &SortKey) -> std::cmp::Ordering {
        let by_value = match (&a.value, &b.value) {
            (SortValue::Int(x), SortValue::Int(y)) => x.cmp(y),
            (SortValue::Text(x), SortValue::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (SortValue::Int(_), SortValue::Text(_)) => std::cmp::Ordering::Less,
            (SortValue::Text(_), SortValue::Int(_)) => std::cmp::Ordering::Greater,
        };
        let ascending = by_value.then(a.id.0.cmp(&b.id.0));
        if self.descending {
            ascending.reverse()
        } else {
            ascending
        }
    }
}

impl fmt::Display for Sort {
    /// `attempts ↓`: the title's and the CLI's way to say the order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arrow = if self.descending { '↓' } else { '↑' };
        write!(f, "{} {arrow}", self.column.as_str())
    }
}

impl Sort {
    /// `COLUMN[:asc|desc]`; a column alone reads descending, like the
    /// default list (newest, most, last first). The error says what to type.
    pub fn parse(s: &str) -> Result<Sort, String> {
        let (word, direction) = match s.split_once(':') {
            Some((w, d)) => (w, Some(d)),
            None => (s, None),
        };
        let words: Vec<&str> = SortColumn::ALL.iter().map(|c| c.as_str()).collect();
        let column = SortColumn::ALL
            .into_iter()
            .find(|c| c.as_str() == word.trim())
            .ok_or_else(|| {
                format!(
                    "unknown sort column {word:?}: use one of {}",
                    words.join(", ")
                )
            })?;
        let descending = match direction.map(str::trim) {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(other) => {
                return Err(format!("unknown sort direction {other:?}: use asc or desc"));
            }
        };
        Ok(Sort { column, descending })
    }
}

/// A row's value in the sort column, as the ledger compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortValue {
    Int(i64),
    Text(String),
}

/// Where a row sits in a sorted list: its sort value, then its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub value: SortValue,
    pub id: OperationId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_orders_by_value_then_id_in_the_sorts_direction() {
        let key = |t: &str, id| SortKey {
            value: SortValue::Text(t.to_string()),
            id: OperationId(id),
        };
        let asc = Sort::parse("account:asc").unwrap();
        // Bytes, as COLLATE "C": upper case before lower, 'é' after 'z'.
        let mut keys = [
            key("é", 1),
            key("b", 2),
            key("a", 9),
            key("B", 3),
            key("a", 4),
        ];
        keys.sort_by(|a, b| asc.compare(a, b));
        let ids: Vec<i64> = keys.iter().map(|k| k.id.0).collect();
        assert_eq!(ids, [3, 4, 9, 2, 1]);
        let desc = Sort::parse("account").unwrap();
        keys.sort_by(|a, b| desc.compare(a, b));
        let ids: Vec<i64> = keys.iter().map(|k| k.id.0).collect();
        assert_eq!(ids, [1, 2, 9, 4, 3]);
    }

    #[test]
    fn sort_words_read_back_and_reject_typos() {
        let s = Sort::parse("attempts:asc").unwrap();
        assert_eq!(
            s,
            Sort {
                column: SortColumn::Attempts,
                descending: false
            }
        );
        assert_eq!(s.to_string(), "attempts ↑");
        assert_eq!(Sort::parse("type").unwrap().to_string(), "type ↓");
        assert!(Sort::parse("attempt").is_err());
        assert!(Sort::parse("id:up").is_err());
        assert_eq!(SortColumn::LastEvent.next(), SortColumn::Id);
    }
}
