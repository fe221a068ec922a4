//! The Drills view: the files given with `--drill` and what their analysis
//! says, or why a file could not be read.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::clean;
use super::theme::Theme;
use crate::app::App;

pub fn render(app: &App, theme: Theme, frame: &mut Frame, area: Rect) {
    let block = Block::bordered().title(" Drills ");
    let mut lines = Vec::new();
    if app.drills.is_empty() {
        lines.push(Line::styled(
            "no drill files loaded: start with --drill FILE (a retry-drill/1 results file)",
            theme.dim(),
        ));
    }
    for file in &app.drills {
        match &file.summary {
            // The report's first line names the file.
            Ok(summary) => {
                for (i, l) in summary.iter().enumerate() {
                    let style = if i == 0 {
                        theme.title()
                    } else {
                        verdict_style(theme, l)
                    };
                    lines.push(Line::styled(clean(l), style));
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
            .scroll((app.drill_scroll, 0)),
        area,
    );
}

/// Duplicate effects and errors stand out; the words carry the meaning
/// without colour.
fn verdict_style(theme: Theme, line: &str) -> ratatui::style::Style {
    if line.contains("duplicate effect") || line.trim_start().starts_with("error") {
        theme.fail()
    } else {
        ratatui::style::Style::default()
    }
}
