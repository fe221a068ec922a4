//! The operation list (Queue and All views): only the rows on screen are
//! turned into table rows, so its cost does not grow with the ledger.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use super::draw::{age, clean};
use super::theme::Theme;
use crate::app::{ListState, View};
use crate::domain::{OperationRow, Sort};
use crate::labels;
use crate::text::{fit, head};

/// More than any column is wide, even with every character made visible.
const CELL_BYTES: usize = 1024;

/// The list on screen and what its rows are read against.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    pub list: &'a ListState,
    pub view: View,
    /// `≈` when the list's count is the database's estimate.
    pub approx: &'static str,
    /// Ages and stale reservations are reckoned at this instant.
    pub now: DateTime<Utc>,
}

pub fn render(shown: Shown, theme: Theme, frame: &mut Frame, area: Rect) {
    let list = shown.list;
    let block = Block::bordered().title(title(shown, theme));
    let w = &list.window;
    if w.rows.is_empty() {
        let progress = list.scan.and_then(|s| s.progress());
        let text = if let Some(progress) = progress {
            format!("{progress}: no match yet")
        } else if !w.loaded {
            "loading…".to_string()
        } else if !list.filter_text.is_empty() {
            "no operation matches the filter (esc clears it)".to_string()
        } else if shown.view == View::Queue {
            "the triage queue is empty: nothing needs a decision".to_string()
        } else {
            "the ledger has no operations".to_string()
        };
        frame.render_widget(Paragraph::new(text).style(theme.dim()).block(block), area);
        return;
    }
    let height = crate::app::layout::list_rows(area);
    // Fixed columns first; what is left is shared so the key (what operators
    // search by) gets the largest part.
    let on_screen = || w.rows.iter().skip(w.top).take(height);
    let width = |n: usize| Constraint::Length(u16::try_from(n).unwrap_or(u16::MAX));
    let id_width = on_screen()
        .map(|r| shown_id(r).len())
        .max()
        .unwrap_or(0)
        .max(2);
    // Rows of a group of ledgers name theirs, in a column of its own.
    let ledger_width = on_screen()
        .filter_map(|r| r.origin.as_ref().map(|o| o.ledger.chars().count()))
        .max()
        .map(|n| n.clamp(6, 16));
    let mut constraints = vec![
        Constraint::Length(1),
        width(id_width),
        Constraint::Length(16),
        Constraint::Length(4),
        Constraint::Fill(2),
        Constraint::Fill(2),
        Constraint::Fill(3),
        Constraint::Length(5),
        Constraint::Fill(2),
    ];
    if let Some(n) = ledger_width {
        constraints.insert(LEDGER_COLUMN, width(n));
    }
    // The widths the table will give each column, so a value too long for
    // its column is cut with `…` rather than silently.
    let inner = block.inner(area);
    let widths: Vec<usize> = Layout::horizontal(constraints.clone())
        .spacing(1)
        .split(inner)
        .iter()
        .map(|r| usize::from(r.width))
        .collect();
    let visible = w.rows.iter().enumerate().skip(w.top).take(height);
    let rows: Vec<Row> = visible
        .map(|(i, row)| table_row(shown, theme, row, i == w.cursor, &widths))
        .collect();
    let mut header = vec![
        "",
        "id",
        "state",
        "age",
        "account",
        "op type",
        "key",
        "att",
        "last event",
    ];
    if ledger_width.is_some() {
        header.insert(LEDGER_COLUMN, "ledger");
    }
    let header = Row::new(header).style(theme.title());
    let table = Table::new(rows, constraints).header(header).block(block);
    frame.render_widget(table, area);
}

fn title(shown: Shown, theme: Theme) -> Line<'static> {
    let list = shown.list;
    let mut spans = vec![Span::styled(
        format!(" {} ", shown.view.title()),
        theme.title(),
    )];
    let w = &list.window;
    let operations = |approx: &str, n: i64| {
        let noun = if n == 1 { "operation" } else { "operations" };
        format!("{approx}{n} {noun} ")
    };
    let count = match (list.scan, list.count) {
        // What the scan found so far: never a count the rows contradict.
        (Some(scan), _) if !scan.done() => Some(format!("{} so far ", scan.found)),
        (Some(scan), _) => Some(operations(
            "",
            i64::try_from(scan.found).unwrap_or(i64::MAX),
        )),
        (None, Some(n)) => Some(operations(shown.approx, n)),
        (None, None) => None,
    };
    spans.extend(count.map(Span::raw));
    if !list.marks.is_empty() {
        spans.push(Span::styled(
            format!("· {} marked ", list.marks.len()),
            theme.marked(),
        ));
    }
    if !list.filter_text.is_empty() {
        spans.push(Span::raw(format!(
            "· filter: {} ",
            clean(&list.filter_text)
        )));
    }
    // The default order (newest first) goes unsaid, as before sorting
    // existed; any other is named, and then "newer"/"older" would lie.
    let sorted = w.sort != Sort::default();
    if sorted {
        spans.push(Span::raw(format!("· sort: {} ", w.sort)));
    }
    let (up, down) = if sorted {
        ("more", "more")
    } else {
        ("newer", "older")
    };
    if !w.at_start && !w.rows.is_empty() {
        spans.push(Span::raw(format!("· ↑ {up} ")));
    }
    if !w.at_end && !w.rows.is_empty() {
        spans.push(Span::raw(format!("· ↓ {down} ")));
    }
    if let Some(progress) = list.scan.and_then(|s| s.progress()) {
        spans.push(Span::styled(format!("· {progress} "), theme.dim()));
    }
    Line::from(spans)
}

/// The columns of one ledger's list; a group's adds its ledger's.
const COLUMNS: usize = 9;
/// Where a group's ledger column goes: after the id.
const LEDGER_COLUMN: usize = 2;

/// The id a row is shown by: its own ledger's, beside that ledger's
/// name in a group.
fn shown_id(row: &OperationRow) -> String {
    row.origin.as_ref().map_or(row.id, |o| o.id).to_string()
}

fn table_row(
    shown: Shown,
    theme: Theme,
    row: &OperationRow,
    selected: bool,
    widths: &[usize],
) -> Row<'static> {
    // The columns after the ledger's, where it has one.
    let grouped = widths.len() > COLUMNS;
    let at = |column: usize| column + usize::from(grouped && column >= LEDGER_COLUMN);
    // A cell shows a few dozen columns: clean only what it can show.
    let cut = |column: usize, text: &str| {
        fit(
            &clean(head(text, CELL_BYTES)),
            widths.get(at(column)).copied().unwrap_or(0),
        )
    };
    let stale = row.is_stale_reservation(shown.now);
    let state = labels::state_label(&row.state, stale);
    let marked = shown.list.marks.contains(&row.id);
    let happened = labels::last_happened(row);
    let last = happened
        .as_deref()
        .or(row.last_error.as_deref())
        .unwrap_or("—");
    // A malformed cell is flagged in the mark column (`!`, unless marked)
    // and its value drawn in the warning style: the row stays listed, so
    // one bad cell never hides an operation.
    let bad = |column: &str| row.malformed.iter().any(|m| m.column == column);
    let warn = |column: &str| {
        if bad(column) {
            theme.fail()
        } else {
            ratatui::style::Style::new()
        }
    };
    let flag = match (marked, row.malformed.is_empty()) {
        (true, _) => Cell::from("*").style(theme.marked()),
        (false, false) => Cell::from("!").style(theme.fail()),
        (false, true) => Cell::from(" "),
    };
    let mut cells = vec![
        flag,
        Cell::from(shown_id(row)).style(theme.dim()),
        Cell::from(state).style(theme.row_state(&row.state, stale)),
        Cell::from(age(&row.updated_at, shown.now)),
        Cell::from(cut(4, &row.account)).style(warn("account")),
        Cell::from(cut(5, &row.op_type)).style(warn("op_type")),
        Cell::from(cut(6, &row.idem_key)).style(warn("idem_key")),
        Cell::from(format!("{}/{}", row.attempts, row.max_attempts)),
        Cell::from(cut(8, last)),
    ];
    if grouped {
        let ledger = row.origin.as_ref().map_or("", |o| &o.ledger);
        let width = widths.get(LEDGER_COLUMN).copied().unwrap_or(0);
        cells.insert(LEDGER_COLUMN, Cell::from(fit(&clean(ledger), width)));
    }
    let r = Row::new(cells);
    if selected {
        r.style(theme.selected())
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use crate::app::testkit::Harness;
    use crate::app::{Intent, View};

    /// A service writes one bad cell per kind with plain SQL; the All view
    /// still lists every operation, flags the bad ones, and the detail
    /// names the column and refuses a decision on a value it cannot trust.
    #[test]
    fn bad_cells_are_flagged_and_every_other_row_stays_listed() {
        let mut h = Harness::new();
        let conn = rusqlite::Connection::open(h.ledger.path()).unwrap();
        let ids: Vec<i64> = conn
            .prepare("SELECT id FROM operations ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let bad = [
            ("account", "CAST(X'61ff62' AS TEXT)"),
            ("op_type", "X'0102'"),
            ("version", "'three'"),
            ("fingerprint", "X'00'"),
        ];
        for ((column, value), id) in bad.iter().zip(&ids) {
            conn.execute(
                &format!("UPDATE operations SET {column} = {value} WHERE id = ?1"),
                [id],
            )
            .unwrap();
        }
        h.act(Intent::ShowView(View::All));
        let list = h.app.current_list().unwrap();
        let listed: Vec<i64> = list.window.rows.iter().map(|r| r.id.0).rev().collect();
        assert_eq!(listed, ids, "every row is listed");
        for ((column, _), id) in bad.iter().zip(&ids) {
            let row = list.window.rows.iter().find(|r| r.id.0 == *id).unwrap();
            // The list row carries no fingerprint; the others are flagged.
            let flagged = row.malformed.iter().any(|m| m.column == *column);
            assert_eq!(flagged, *column != "fingerprint", "{column}: {row:?}");
        }
        let frame = crate::ui::tests::frame(&h);
        assert!(frame.contains("a\u{FFFD}b"), "{frame}");
        assert!(frame.contains("<blob 2 bytes>"), "{frame}");
        assert_eq!(
            frame.lines().filter(|l| l.contains("│! ")).count(),
            3,
            "{frame}"
        );

        // The detail of the row with the text version names the column.
        while h
            .app
            .current_list()
            .unwrap()
            .window
            .selected()
            .unwrap()
            .id
            .0
            != ids[2]
        {
            h.keys("j");
        }
        h.keys("enter");
        let frame = crate::ui::tests::frame(&h);
        assert!(
            frame.contains("! malformed: version: text \"three\""),
            "{frame}"
        );
        assert!(frame.contains("! no decision: column version"), "{frame}");
    }
}
