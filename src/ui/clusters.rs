//! The Clusters view: the queue grouped by receiver, account, last error
//! and age, one section per dimension, biggest group first with a bar
//! against the queue's size, so an incident reads as one long bar. The
//! cursor is on a group; the list scrolls to keep it on screen. Ledger text
//! (types, accounts, errors) is untrusted: it passes through `clean`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::draw::clean;
use super::theme::Theme;
use super::timeline::{self, CHART_HEIGHT};
use crate::app::ClustersPane;
use crate::domain::{Cluster, ClusterDimension, ClusterSection};
use crate::text::{fit, pad};

/// Width of the count column and of the bar.
const COUNT: usize = 8;
const BAR: usize = 12;

/// The chart shows from this many inner rows up: below, the groups need
/// every row.
const CHART_FROM: u16 = 24;

pub fn render(pane: &ClustersPane, theme: Theme, frame: &mut Frame, area: Rect) {
    let Some(clusters) = &pane.clusters else {
        let block = Block::bordered().title(" Clusters ");
        let text = Paragraph::new("grouping the queue…").style(theme.dim());
        frame.render_widget(text.block(block), area);
        return;
    };
    let block = Block::bordered().title(Line::from(vec![
        Span::styled(" Clusters ", theme.title()),
        Span::styled(
            format!("the triage queue grouped: {} operations ", clusters.total),
            theme.dim(),
        ),
    ]));
    if clusters.total == 0 {
        let text = Paragraph::new("the triage queue is empty: nothing to group").style(theme.dim());
        frame.render_widget(text.block(block), area);
        return;
    }
    let mut inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height >= CHART_FROM && !clusters.timeline.counts.is_empty() {
        let chart = Rect {
            height: CHART_HEIGHT,
            ..inner
        };
        timeline::chart(&clusters.timeline, theme, frame, chart);
        inner.y += CHART_HEIGHT + 1;
        inner.height -= CHART_HEIGHT + 1;
    }
    let width = usize::from(inner.width);
    let mut lines: Vec<Line> = Vec::new();
    let mut cursor_line = 0;
    let mut group = 0;
    for section in &clusters.sections {
        lines.push(heading(section, theme, width));
        for cluster in &section.top {
            let selected = group == pane.cursor;
            if selected {
                cursor_line = lines.len();
            }
            lines.push(group_line(cluster, clusters.total, selected, theme, width));
            group += 1;
        }
        if section.more_groups > 0 {
            let more = format!(
                "{}… {} more groups ({} operations)",
                " ".repeat(COUNT + BAR + 4),
                section.more_groups,
                section.more_count
            );
            lines.push(Line::styled(fit(&more, width), theme.dim()));
        }
    }
    // The cursor's group on screen; from the top while it fits.
    let height = usize::from(inner.height).max(1);
    let top = (cursor_line + 1).saturating_sub(height);
    let visible: Vec<Line> = lines.into_iter().skip(top).take(height).collect();
    frame.render_widget(Paragraph::new(visible), inner);
}

fn heading(section: &ClusterSection, theme: Theme, width: usize) -> Line<'static> {
    let groups = section.top.len() + section.more_groups;
    let noun = if groups == 1 { "group" } else { "groups" };
    Line::from(vec![
        Span::styled(section.dimension.title().to_string(), theme.title()),
        Span::styled(fit(&format!("  {groups} {noun}"), width), theme.dim()),
    ])
}

fn group_line(
    cluster: &Cluster,
    total: i64,
    selected: bool,
    theme: Theme,
    width: usize,
) -> Line<'static> {
    // At least one block for any group, so a small one is still seen.
    let filled = if total > 0 && cluster.count > 0 {
        (usize::try_from(cluster.count.saturating_mul(BAR as i64) / total).unwrap_or(BAR))
            .clamp(1, BAR)
    } else {
        0
    };
    let bar = format!("{}{}", "█".repeat(filled), " ".repeat(BAR - filled));
    let marker = if selected { "▸ " } else { "  " };
    let lead = format!("{marker}{:>COUNT$}  {bar}  ", cluster.count);
    let room = width.saturating_sub(lead.chars().count());
    let (value, missing) = match &cluster.value {
        Some(v) => (clean(v), false),
        None if cluster.dimension == ClusterDimension::LastError => {
            ("(no error recorded)".to_string(), true)
        }
        None => ("(none)".to_string(), true),
    };
    let value = fit(&value, room);
    let line = Line::from(vec![
        Span::raw(lead),
        if missing {
            Span::styled(pad(&value, room), theme.dim())
        } else {
            Span::raw(pad(&value, room))
        },
    ]);
    if selected {
        line.style(theme.selected())
    } else {
        line
    }
}
