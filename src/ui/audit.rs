//! The audit view: decisions, newest first, as the ledger recorded them.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Block, Paragraph, Row, Table};

use super::draw::clean;
use super::theme::Theme;
use crate::app::window::Window;
use crate::domain::Decision;
use crate::labels;

pub fn render(w: &Window<Decision>, theme: Theme, frame: &mut Frame, area: Rect) {
    let block = Block::bordered().title(" Audit: decisions, newest first ");
    if w.rows.is_empty() {
        let text = if w.loaded {
            "no decisions recorded yet"
        } else {
            "loading…"
        };
        frame.render_widget(Paragraph::new(text).style(theme.dim()).block(block), area);
        return;
    }
    let height = crate::app::layout::list_rows(area);
    let rows: Vec<Row> = w
        .rows
        .iter()
        .enumerate()
        .skip(w.top)
        .take(height)
        .map(|(i, d)| {
            let what = labels::decision_particulars(d).join("; ");
            let row = Row::new(vec![
                d.id.to_string(),
                clean(&d.decided_at),
                clean(&d.operator),
                format!("#{}", d.op_id),
                clean(&d.decision),
                labels::decision_change(d),
                what,
            ]);
            if i == w.cursor {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    let header = Row::new([
        "id",
        "decided at",
        "operator",
        "op",
        "decision",
        "change",
        "what",
    ])
    .style(theme.title());
    let table = Table::new(
        rows,
        [
            Constraint::Length(5),
            Constraint::Length(20),
            Constraint::Fill(1),
            Constraint::Length(6),
            Constraint::Length(14),
            Constraint::Length(24),
            Constraint::Fill(3),
        ],
    )
    .header(header)
    .block(block);
    frame.render_widget(table, area);
}
