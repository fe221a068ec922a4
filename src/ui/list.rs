//! The operation list (Queue and All views): only the rows on screen are
//! turned into table rows, so its cost does not grow with the ledger.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use super::theme::Theme;
use super::{age, clean};
use crate::app::{App, ListState, View};
use crate::domain::OperationRow;

pub fn render(app: &App, theme: Theme, frame: &mut Frame, area: Rect) {
    let Some(list) = app.current_list() else {
        return;
    };
    let block = Block::bordered().title(title(app, list));
    let w = &list.window;
    if w.rows.is_empty() {
        let text = if !w.loaded {
            "loading…".to_string()
        } else if !list.filter_text.is_empty() {
            "no operation matches the filter (esc clears it)".to_string()
        } else if app.view == View::Queue {
            "the triage queue is empty: nothing needs a decision".to_string()
        } else {
            "the ledger has no operations".to_string()
        };
        frame.render_widget(Paragraph::new(text).style(theme.dim()).block(block), area);
        return;
    }
    let height = crate::app::layout::list_rows(area);
    let visible = w.rows.iter().enumerate().skip(w.top).take(height);
    let rows: Vec<Row> = visible
        .map(|(i, row)| table_row(app, list, theme, row, i == w.cursor))
        .collect();
    let header = Row::new([
        "",
        "state",
        "age",
        "account",
        "op type",
        "key",
        "att",
        "last event",
    ])
    .style(theme.title());
    let table = Table::new(
        rows,
        [
            // Fixed columns first; what is left is shared so the key
            // (what operators search by) gets the largest part.
            Constraint::Length(1),
            Constraint::Length(16),
            Constraint::Length(4),
            Constraint::Fill(2),
            Constraint::Fill(2),
            Constraint::Fill(3),
            Constraint::Length(5),
            Constraint::Fill(2),
        ],
    )
    .header(header)
    .block(block);
    frame.render_widget(table, area);
}

fn title(app: &App, list: &ListState) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!(" {} ", app.view.title()),
        Theme { color: app.color }.title(),
    )];
    let w = &list.window;
    if let Some(n) = list.count {
        let noun = if n == 1 { "operation" } else { "operations" };
        spans.push(Span::raw(format!("{n} {noun} ")));
    }
    if !list.marks.is_empty() {
        spans.push(Span::styled(
            format!("· {} marked ", list.marks.len()),
            Theme { color: app.color }.marked(),
        ));
    }
    if !list.filter_text.is_empty() {
        spans.push(Span::raw(format!(
            "· filter: {} ",
            clean(&list.filter_text)
        )));
    }
    if !w.at_start && !w.rows.is_empty() {
        spans.push(Span::raw("· ↑ newer "));
    }
    if !w.at_end && !w.rows.is_empty() {
        spans.push(Span::raw("· ↓ older "));
    }
    Line::from(spans)
}

fn table_row(
    app: &App,
    list: &ListState,
    theme: Theme,
    row: &OperationRow,
    selected: bool,
) -> Row<'static> {
    let state = if row.is_stale_reservation(app.now) {
        "reserved (stale)".to_string()
    } else {
        clean(row.state.as_str())
    };
    let marked = list.marks.contains(&row.id);
    let last = match (&row.last_event, &row.last_error) {
        (Some(e), _) => clean(e),
        (None, Some(err)) => clean(err),
        (None, None) => "—".to_string(),
    };
    let cells = vec![
        Cell::from(if marked { "*" } else { " " }).style(theme.marked()),
        Cell::from(state).style(theme.state(&row.state)),
        Cell::from(age(&row.updated_at, app.now)),
        Cell::from(clean(&row.account)),
        Cell::from(clean(&row.op_type)),
        Cell::from(clean(&row.idem_key)),
        Cell::from(format!("{}/{}", row.attempts, row.max_attempts)),
        Cell::from(last),
    ];
    let r = Row::new(cells);
    if selected {
        r.style(theme.selected())
    } else {
        r
    }
}
