//! Cells a service wrote in a form their column does not allow, and which
//! of them stop a decision. Plain data: the store flags them while reading,
//! this file only names and describes them.

/// A cell the ledger holds in a form its column does not allow: invalid
/// UTF-8, a BLOB or NULL where text is required, text where a number is.
/// Services write with plain SQL, so this happens; the row is still read and
/// shown (the value made visible in place, as `sqlite3` would), flagged with
/// the column's name, and every other row stays in reach: one bad cell
/// never hides the ledger from the operator who has to repair it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The column, as the schema names it.
    pub column: &'static str,
    /// What the cell held, already safe for a terminal: `invalid UTF-8,
    /// shown with U+FFFD`, `NULL`, `a 12-byte BLOB`, `text "three"`.
    pub found: String,
}

impl Malformed {
    /// The columns that say which operation a decision is about and what it
    /// changes: a decision on a row where one of them is malformed could
    /// land on the wrong operation or compare the wrong version, so it is
    /// refused (see [`super::Operation::malformed_identity`]).
    pub const IDENTITY: [&'static str; 6] =
        ["id", "account", "op_type", "idem_key", "version", "state"];

    /// `account: invalid UTF-8, shown with U+FFFD; version: text "three"`.
    pub fn describe(cells: &[Malformed]) -> String {
        cells
            .iter()
            .map(|m| format!("{}: {}", m.column, m.found))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Why no decision is recorded on a row with this cell.
    pub fn refusal(&self) -> String {
        format!(
            "column {} is malformed ({}); a decision needs the operation's identity exactly as stored: repair the row with SQL first",
            self.column, self.found
        )
    }
}
