//! The Drills view's comparison (`v`): one row per case name, its verdict
//! in each run side by side, and what changed first (regressions, fixed,
//! missing). The flags come from `app::drill_compare`; this file only
//! draws them. Drill text is untrusted: every string passes through `clean`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};

use super::draw::clean;
use super::theme::Theme;
use crate::app::DrillsPane;
use crate::app::drills::compare::{CaseAcrossRuns, CaseChange};
use crate::text::fit;

pub fn render(pane: &DrillsPane, theme: Theme, frame: &mut Frame, area: Rect) {
    let (runs, cases) = pane.compared();
    let block = Block::bordered().title(title(theme, runs.len(), &cases, &pane.filter_text));
    if cases.is_empty() {
        frame.render_widget(
            Paragraph::new("no case matches the filter (esc clears it)")
                .style(theme.dim())
                .block(block),
            area,
        );
        return;
    }
    let mut constraints = vec![Constraint::Length(10), Constraint::Fill(2)];
    constraints.extend(runs.iter().map(|_| Constraint::Fill(1)));
    let columns = Layout::horizontal(constraints.clone())
        .spacing(1)
        .split(block.inner(area));
    let width = |i: usize| columns.get(i).map_or(0, |r| usize::from(r.width));
    let mut header = vec![Cell::from("change"), Cell::from("case")];
    header.extend(runs.iter().enumerate().map(|(r, file)| {
        let name = pane.files.get(*file).map_or("", |f| f.run_name());
        Cell::from(fit(&clean(name), width(r + 2)))
    }));
    let height = crate::app::layout::list_rows(area);
    let rows: Vec<Row> = cases
        .iter()
        .enumerate()
        .skip(pane.top)
        .take(height)
        .map(|(i, case)| {
            let row = case_row(theme, case, &width);
            if i == pane.cursor {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    frame.render_widget(
        Table::new(rows, constraints)
            .header(Row::new(header).style(theme.title()))
            .block(block),
        area,
    );
}

fn case_row(theme: Theme, case: &CaseAcrossRuns, width: &dyn Fn(usize) -> usize) -> Row<'static> {
    let mut cells = vec![
        Cell::from(case.change.label()).style(change_style(theme, case.change)),
        Cell::from(fit(&clean(&case.case), width(1))),
    ];
    cells.extend(case.verdicts.iter().enumerate().map(|(r, v)| match v {
        Some(v) => Cell::from(fit(v.as_str(), width(r + 2))).style(theme.verdict(*v)),
        None => Cell::from("— not in run").style(theme.dim()),
    }));
    Row::new(cells)
}

/// The title counts what changed, so the news is read before any row.
fn title(theme: Theme, runs: usize, cases: &[CaseAcrossRuns], filter: &str) -> Line<'static> {
    let count = |change| cases.iter().filter(|c| c.change == change).count();
    let mut spans = vec![
        Span::styled(" Drills ", theme.title()),
        Span::raw(format!("· comparing {runs} runs, {} cases ", cases.len())),
    ];
    for change in [
        CaseChange::Regression,
        CaseChange::Fixed,
        CaseChange::Missing,
    ] {
        let n = count(change);
        if n > 0 {
            spans.push(Span::styled(
                format!("· {n} {} ", change.label()),
                change_style(theme, change),
            ));
        }
    }
    if !filter.is_empty() {
        spans.push(Span::raw(format!("· filter: {} ", clean(filter))));
    }
    Line::from(spans)
}

fn change_style(theme: Theme, change: CaseChange) -> Style {
    match change {
        CaseChange::Regression => theme.fail(),
        CaseChange::Fixed => theme.pass(),
        CaseChange::Missing | CaseChange::Changed => theme.note(),
        CaseChange::Same => theme.dim(),
    }
}
