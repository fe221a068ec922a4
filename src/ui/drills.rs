//! The Drills view: one row per case of every loaded drill file (and one
//! per file that could not be read, saying why), with the cursor, the
//! filter and the sort in the title. The verdict's look comes from the
//! analysis (`Verdict`), never from searching the words. A run made
//! against a receiver (`settle drill run`) is marked `▸OP_TYPE`. Drill
//! text is untrusted: every string from a file passes through `clean`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use super::draw::clean;
use super::theme::Theme;
use crate::app::{DrillRow, DrillsPane};
use crate::drill::CaseAnalysis;
use crate::text::fit;

pub fn render(pane: &DrillsPane, theme: Theme, frame: &mut Frame, area: Rect) {
    if pane.compare {
        return super::drill_compare::render(pane, theme, frame, area);
    }
    let rows = pane.rows();
    let block = Block::bordered().title(title(pane, theme, rows.len()));
    if rows.is_empty() {
        let text = if pane.files.is_empty() {
            "no drill runs loaded: start with --drill FILE or --drill-dir DIR (retry-drill/1)"
        } else {
            "no case matches the filter (esc clears it)"
        };
        frame.render_widget(Paragraph::new(text).style(theme.dim()).block(block), area);
        return;
    }
    let constraints = [
        Constraint::Fill(1),
        Constraint::Fill(2),
        Constraint::Max(12),
        Constraint::Length(5),
        Constraint::Length(3),
        Constraint::Length(9),
        Constraint::Length(4),
        Constraint::Length(16),
    ];
    // The widths the table will give each column, so a value too long for
    // its column is cut with `…` rather than silently.
    let inner = block.inner(area);
    let columns = Layout::horizontal(constraints).spacing(1).split(inner);
    let widths: Vec<usize> = columns.iter().map(|r| usize::from(r.width)).collect();
    let height = crate::app::layout::list_rows(area);
    let visible: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(pane.top)
        .take(height)
        .map(|(i, row)| {
            let r = table_row(pane, theme, *row, &widths);
            if i == pane.cursor {
                r.style(theme.selected())
            } else {
                r
            }
        })
        .collect();
    let header = Row::new([
        "run", "case", "strategy", "att", "eff", "caller", "pass", "verdict",
    ])
    .style(theme.title());
    frame.render_widget(
        Table::new(visible, constraints).header(header).block(block),
        area,
    );
    // A file that could not be read says why across the case columns
    // (Enter shows it whole): drawn over its row, as a table cell cannot
    // span columns.
    let from = columns.get(1).map_or(inner.x, |c| c.x);
    let wide = inner.right().saturating_sub(from);
    for (y, (i, row)) in (inner.y + 1..).zip(rows.iter().enumerate().skip(pane.top).take(height)) {
        if let Some(why) = unreadable(pane, *row) {
            let style = if i == pane.cursor {
                theme.selected()
            } else {
                theme.error()
            };
            frame.render_widget(
                Paragraph::new(fit(&why, usize::from(wide))).style(style),
                Rect::new(from, y, wide, 1),
            );
        }
    }
}

/// Why the file of a row without a case could not be read.
fn unreadable(pane: &DrillsPane, row: DrillRow) -> Option<String> {
    if row.case.is_some() {
        return None;
    }
    match &pane.files.get(row.file)?.analysis {
        Err(e) => Some(format!("cannot read: {}", clean(e))),
        Ok(_) => None,
    }
}

fn title(pane: &DrillsPane, theme: Theme, shown: usize) -> Line<'static> {
    let mut spans = vec![Span::styled(" Drills ", theme.title())];
    let noun = if shown == 1 { "row" } else { "rows" };
    spans.push(Span::raw(format!("{shown} {noun} ")));
    let unreadable = pane.files.iter().filter(|f| f.analysis.is_err()).count();
    if unreadable > 0 {
        spans.push(Span::styled(
            format!("· {unreadable} unreadable "),
            theme.error(),
        ));
    }
    spans.push(Span::raw(format!("· sort: {} ", pane.sort.label())));
    if !pane.filter_text.is_empty() {
        spans.push(Span::raw(format!(
            "· filter: {} ",
            clean(&pane.filter_text)
        )));
    }
    Line::from(spans)
}

fn table_row(pane: &DrillsPane, theme: Theme, row: DrillRow, widths: &[usize]) -> Row<'static> {
    let cut =
        |column: usize, text: &str| fit(&clean(text), widths.get(column).copied().unwrap_or(0));
    let Some(loaded) = pane.files.get(row.file) else {
        return Row::new(Vec::<Cell>::new());
    };
    // A run against a real receiver is marked with its op type, and named
    // by its folder (`drill-<stamp>`): every such file is drill-results.json.
    let run = match loaded.against_receiver() {
        Some(op_type) => {
            let folder = loaded.path.rsplit(['/', '\\']).nth(1).unwrap_or_default();
            Cell::from(cut(0, &format!("▸{op_type} {folder}")))
        }
        None => Cell::from(cut(0, loaded.run_name())),
    };
    // A file that could not be read: its why is drawn over the row.
    let Some(case) = pane.case_analysis(row) else {
        return Row::new(vec![run]);
    };
    Row::new(vec![
        run,
        Cell::from(cut(1, &case.case)),
        Cell::from(cut(2, case.strategy.as_deref().unwrap_or("—"))),
        Cell::from(attempts(case)),
        Cell::from(case.effect_count.to_string()),
        Cell::from(cut(5, case.caller_result.as_deref().unwrap_or("—"))),
        Cell::from(passed(case)),
        Cell::from(case.verdict.as_str()).style(theme.verdict(case.verdict)),
    ])
}

/// `2/3`: attempts used of the budget.
fn attempts(case: &CaseAnalysis) -> String {
    match case.max_attempts {
        Some(max) => format!("{}/{max}", case.attempts_used),
        None => case.attempts_used.to_string(),
    }
}

/// Whether the case met its expectation, recomputed when the file says
/// what it expected; the producer's claim otherwise. A claim the
/// recomputation contradicts is flagged with `!` (the detail says why).
pub(super) fn passed(case: &CaseAnalysis) -> String {
    let word = |b: bool| if b { "yes" } else { "no" };
    match (case.passed_recomputed, case.passed_claimed) {
        (Some(r), Some(c)) if r != c => format!("{}!", word(r)),
        (Some(r), _) | (None, Some(r)) => word(r).to_string(),
        (None, None) => "—".to_string(),
    }
}
