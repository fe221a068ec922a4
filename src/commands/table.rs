//! The table `settle list` prints for people: column widths measured on
//! the first page, one line per operation, the state in its colour.

use std::io::{self, Write};

use chrono::{DateTime, Utc};
use ratatui::style::Color;

use crate::domain::{Malformed, OperationRow, age};
use crate::labels;
use crate::text::{pad, sanitize};

/// `  ! malformed: account: invalid UTF-8 …`, after a row's last column.
fn malformed_note(cells: &[Malformed]) -> String {
    if cells.is_empty() {
        String::new()
    } else {
        format!("  ! malformed: {}", Malformed::describe(cells))
    }
}

/// Column widths for the table format, measured on the first page and
/// capped so one long value cannot push the rest off the screen. The key is
/// last and never cut: it is what operators copy.
pub(super) struct TableWidths {
    state: usize,
    account: usize,
    op_type: usize,
    last_event: usize,
}

impl TableWidths {
    pub(super) fn of<'r>(
        rows: impl Iterator<Item = &'r OperationRow> + Clone,
        now: DateTime<Utc>,
    ) -> Self {
        let w = |f: &dyn Fn(&OperationRow) -> usize, min: usize, max: usize| {
            rows.clone().map(f).max().unwrap_or(0).clamp(min, max)
        };
        TableWidths {
            state: w(&|r| label(r, now).chars().count(), 5, 16),
            account: w(&|r| display_width(&r.account), 7, 24),
            op_type: w(&|r| display_width(&r.op_type), 4, 22),
            last_event: w(
                &|r| display_width(labels::last_happened(r).as_deref().unwrap_or("-")),
                10,
                18,
            ),
        }
    }

    pub(super) fn header(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{:>8}  {:<sw$}  {:>5}  {:>8}  {:<aw$}  {:<tw$}  {:<ew$}  KEY",
            "ID",
            "STATE",
            "AGE",
            "ATTEMPTS",
            "ACCOUNT",
            "TYPE",
            "LAST EVENT",
            sw = self.state,
            aw = self.account,
            tw = self.op_type,
            ew = self.last_event,
        )
    }

    pub(super) fn row(
        &self,
        out: &mut dyn Write,
        row: &OperationRow,
        now: DateTime<Utc>,
        colour: bool,
    ) -> io::Result<()> {
        let state = pad(&label(row, now), self.state);
        let state = if colour {
            let stale = row.is_stale_reservation(now);
            format!(
                "\x1b[{}m{state}\x1b[0m",
                ansi(labels::state_color(&row.state, stale))
            )
        } else {
            state
        };
        writeln!(
            out,
            "{:>8}  {state}  {:>5}  {:>8}  {}  {}  {}  {}{}",
            row.id.0,
            age(&row.updated_at, now),
            format!("{}/{}", row.attempts, row.max_attempts),
            pad(&sanitize(&row.account), self.account),
            pad(&sanitize(&row.op_type), self.op_type),
            pad(
                &sanitize(labels::last_happened(row).as_deref().unwrap_or("-")),
                self.last_event
            ),
            sanitize(&row.idem_key),
            malformed_note(&row.malformed),
        )
    }
}

fn label(row: &OperationRow, now: DateTime<Utc>) -> String {
    labels::state_label(&row.state, row.is_stale_reservation(now))
}

/// The SGR foreground code of a palette colour (the states use only these).
fn ansi(color: Color) -> &'static str {
    match color {
        Color::Red => "31",
        Color::Green => "32",
        Color::Yellow => "33",
        Color::Blue => "34",
        Color::Magenta => "35",
        Color::Cyan => "36",
        _ => "0",
    }
}

fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(sanitize(s).as_ref())
}
