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
use crate::domain::clusters::TIMELINE_BUCKETS;
use crate::domain::{Cluster, ClusterDimension, ClusterSection, Clusters};
use crate::text::{fit, pad};

/// Width of the count column and of the bar.
const COUNT: usize = 8;
const BAR: usize = 12;

/// The chart shows from this many inner rows up: below, the groups need
/// every row.
const CHART_FROM: u16 = 24;

/// Columns of a group's sparkline, one per bucket, and a gap of two.
const SPARK: usize = TIMELINE_BUCKETS + 2;
/// Where a group's sparkline starts: after the marker, count and bar.
const LEAD: u16 = (2 + COUNT + 2 + BAR + 2) as u16;

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
    // The sparklines share the chart's buckets: they come with it.
    let charted = inner.height >= CHART_FROM && !clusters.timeline.counts.is_empty();
    if charted {
        let chart = Rect {
            height: CHART_HEIGHT,
            ..inner
        };
        timeline::chart(&clusters.timeline, theme, frame, chart);
        inner.y += CHART_HEIGHT + 1;
        inner.height -= CHART_HEIGHT + 1;
    }
    let spark = if charted { SPARK } else { 0 };
    groups(pane, clusters, spark, theme, frame, inner);
}

/// Every section's groups in `inner`, scrolled to the cursor; with `spark`
/// columns after each bar for the group's sparkline (0: none).
fn groups(
    pane: &ClustersPane,
    clusters: &Clusters,
    spark: usize,
    theme: Theme,
    frame: &mut Frame,
    inner: Rect,
) {
    let width = usize::from(inner.width);
    let mut lines: Vec<Line> = Vec::new();
    // The group drawn on each line, for its sparkline.
    let mut drawn: Vec<Option<&Cluster>> = Vec::new();
    let mut cursor_line = 0;
    let mut group = 0;
    for section in &clusters.sections {
        lines.push(heading(section, theme, width));
        drawn.push(None);
        for cluster in &section.top {
            let selected = group == pane.cursor;
            if selected {
                cursor_line = lines.len();
            }
            let line = group_line(cluster, clusters.total, selected, spark, theme, width);
            lines.push(line);
            drawn.push(Some(cluster));
            group += 1;
        }
        if section.more_groups > 0 {
            let more = format!(
                "{}… {} more groups ({} operations)",
                " ".repeat(COUNT + BAR + 4 + spark),
                section.more_groups,
                section.more_count
            );
            lines.push(Line::styled(fit(&more, width), theme.dim()));
            drawn.push(None);
        }
    }
    // The cursor's group on screen; from the top while it fits.
    let height = usize::from(inner.height).max(1);
    let top = (cursor_line + 1).saturating_sub(height);
    let visible: Vec<Line> = lines.into_iter().skip(top).take(height).collect();
    frame.render_widget(Paragraph::new(visible), inner);
    if spark == 0 || inner.width < LEAD + SPARK as u16 {
        return;
    }
    for (row, cluster) in drawn.into_iter().skip(top).take(height).enumerate() {
        if let Some(cluster) = cluster {
            let at = Rect {
                x: inner.x + LEAD,
                y: inner.y + row as u16,
                width: SPARK as u16 - 2,
                height: 1,
            };
            timeline::spark(&cluster.timeline, theme, frame, at);
        }
    }
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
    spark: usize,
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
    let lead = format!(
        "{marker}{:>COUNT$}  {bar}  {}",
        cluster.count,
        " ".repeat(spark)
    );
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
