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
        lines.push(Line::styled(clean(&file.path), theme.title()));
        match &file.summary {
            Ok(summary) => {
                for l in summary {
                    lines.push(Line::raw(format!("  {}", clean(l))));
                }
            }
            Err(e) => lines.push(Line::styled(format!("  {}", clean(e)), theme.error())),
        }
        lines.push(Line::raw(""));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}
