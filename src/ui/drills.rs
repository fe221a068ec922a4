//! The Drills view: the files given with `--drill` and what their analysis
//! says, or why a file could not be read. The report's words come from
//! `drill::report`; the look of each line from what the analysis says about
//! it (a duplicate effect, an error finding), never from the words.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::clean;
use super::theme::Theme;
use crate::app::App;
use crate::drill::report::{LineKind, text_lines};
use crate::drill::{Severity, Verdict};

pub fn render(app: &App, theme: Theme, frame: &mut Frame, area: Rect) {
    let block = Block::bordered().title(" Drills ");
    let mut lines = Vec::new();
    if app.drills.files.is_empty() {
        lines.push(Line::styled(
            "no drill files loaded: start with --drill FILE (a retry-drill/1 results file)",
            theme.dim(),
        ));
    }
    for file in &app.drills.files {
        match &file.analysis {
            // The report's first line names the file.
            Ok(loaded) => {
                for line in text_lines(&loaded.0, &loaded.1) {
                    lines.push(Line::styled(clean(&line.text), style(theme, line.kind)));
                }
            }
            Err(e) => {
                lines.push(Line::styled(clean(&file.path), theme.title()));
                lines.push(Line::styled(format!("  {}", clean(e)), theme.error()));
            }
        }
        lines.push(Line::raw(""));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((app.drills.scroll, 0)),
        area,
    );
}

/// Duplicate effects and errors stand out; the words carry the meaning
/// without colour.
fn style(theme: Theme, kind: LineKind) -> Style {
    match kind {
        LineKind::Heading => theme.title(),
        LineKind::Case(Verdict::DuplicateEffect) | LineKind::Finding(Severity::Error) => {
            theme.fail()
        }
        LineKind::Totals { duplicates } if duplicates > 0 => theme.fail(),
        LineKind::Detail | LineKind::Case(_) | LineKind::Totals { .. } | LineKind::Finding(_) => {
            Style::default()
        }
    }
}
