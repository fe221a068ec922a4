//! Time drawn rather than read: the Clusters view's bar chart of when the
//! queue's operations got stuck (their last attempt), with an axis in
//! local time, and the
//! sparklines that repeat it small (per group, and the queue's size in the
//! header). Built from ratatui's own widgets, so bars scale in eighths.

use chrono::{DateTime, TimeZone};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, Paragraph, Sparkline};

use super::theme::Theme;
use chrono::Utc;

use crate::app::history::QueueHistory;
use crate::domain::Timeline;

/// Rows the chart takes: a title, the bars, the axis.
pub const CHART_HEIGHT: u16 = 9;

/// The chart of `timeline` in `area` (its full [`CHART_HEIGHT`]): a title
/// line with the step and the biggest bar, the bars, and under them the
/// time the first, middle and last bars start.
pub fn chart(timeline: &Timeline, theme: Theme, frame: &mut Frame, area: Rect) {
    let buckets = timeline.counts.len();
    if buckets == 0 || area.height < 3 {
        return;
    }
    let max = timeline.counts.iter().copied().max().unwrap_or(0);
    let title = Line::from(vec![
        Span::styled("when they got stuck (last attempt)", theme.title()),
        Span::styled(
            format!(
                "  per {}, local time; the tallest bar is {max}",
                step_words(timeline.step)
            ),
            theme.dim(),
        ),
    ]);
    frame.render_widget(Paragraph::new(title), Rect { height: 1, ..area });
    let n = u16::try_from(buckets).unwrap_or(u16::MAX);
    // One column between bars; every bar as wide as the room allows.
    let width = (area.width.saturating_add(1) / n).saturating_sub(1).max(1);
    let bars: Vec<Bar> = timeline
        .counts
        .iter()
        .map(|&c| Bar::new(c).text_value(""))
        .collect();
    let chart = BarChart::vertical(bars)
        .bar_width(width)
        .bar_gap(1)
        .bar_style(theme.note());
    let bars_area = Rect {
        y: area.y + 1,
        height: area.height - 2,
        ..area
    };
    frame.render_widget(chart, bars_area);
    let axis = axis(timeline, usize::from(width) + 1, usize::from(area.width));
    let axis_area = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    frame.render_widget(Paragraph::new(Line::styled(axis, theme.dim())), axis_area);
}

/// The axis under the bars, each `pitch` columns apart: the start of the
/// first, the middle and the last bar, each under its bar as far as the
/// width allows.
fn axis(timeline: &Timeline, pitch: usize, width: usize) -> String {
    let buckets = timeline.counts.len();
    let mut line: Vec<char> = vec![' '; width];
    for i in [0, buckets / 2, buckets.saturating_sub(1)] {
        let at = timeline.start + timeline.step * i as i64;
        let label: Vec<char> = format!("└{}", local(at, timeline.step)).chars().collect();
        let from = (i * pitch).min(width.saturating_sub(label.len()));
        for (slot, c) in line.iter_mut().skip(from).zip(label) {
            *slot = c;
        }
    }
    line.into_iter().collect::<String>().trim_end().to_string()
}

/// One group's operations per bucket, as a sparkline scaled to its own
/// biggest bucket: the shape says when that group's operations got stuck.
pub fn spark(counts: &[u64], theme: Theme, frame: &mut Frame, area: Rect) {
    if counts.is_empty() {
        return;
    }
    frame.render_widget(Sparkline::default().data(counts).style(theme.note()), area);
}

/// Columns of the header's sparkline: two minutes each over the hour.
const HISTORY_WIDTH: u16 = 30;
const HISTORY_LABEL: &str = "queue, last hour ";

/// The queue's size over the last hour at the right end of `header`, past
/// the `used` columns; nothing when it does not fit or the size has been
/// known for less than a minute (a point is no trend).
pub fn history(
    history: &QueueHistory,
    now: DateTime<Utc>,
    theme: Theme,
    frame: &mut Frame,
    header: Rect,
    used: u16,
) {
    let label = HISTORY_LABEL.chars().count() as u16;
    let room = header.width.saturating_sub(used);
    if history.known_for(now) < chrono::Duration::minutes(1) || room < HISTORY_WIDTH + label + 2 {
        return;
    }
    let x = header.right() - HISTORY_WIDTH - label;
    frame.render_widget(
        Paragraph::new(Line::styled(HISTORY_LABEL, theme.dim())),
        Rect {
            x,
            width: label,
            ..header
        },
    );
    let data = history.buckets(now, usize::from(HISTORY_WIDTH));
    frame.render_widget(
        Sparkline::default().data(data).style(theme.note()),
        Rect {
            x: x + label,
            width: HISTORY_WIDTH,
            height: 1,
            ..header
        },
    );
}

/// `at` (seconds since the epoch) in the operator's zone, as precise as a
/// bucket `step` needs.
fn local(at: i64, step: i64) -> String {
    // Snapshots must not depend on the machine's zone.
    #[cfg(test)]
    let zone = chrono::Utc;
    #[cfg(not(test))]
    let zone = chrono::Local;
    let Some(time): Option<DateTime<_>> = zone.timestamp_opt(at, 0).single() else {
        return "?".to_string();
    };
    let format = if step >= 86_400 {
        "%Y-%m-%d"
    } else if step >= 3_600 {
        "%m-%d %H:%M"
    } else {
        "%H:%M"
    };
    time.format(format).to_string()
}

/// A bucket's span in words: "5 min", "1 h", "7 d".
fn step_words(step: i64) -> String {
    if step % 86_400 == 0 {
        format!("{} d", step / 86_400)
    } else if step % 3_600 == 0 {
        format!("{} h", step / 3_600)
    } else {
        format!("{} min", step / 60)
    }
}
