//! The help popup, generated from the keymap: only the keys valid in the
//! mode the operator came from (the list, or the decision form).

use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::centered;
use super::theme::Theme;
use crate::app::App;
use crate::keymap::KeyMode;

pub fn render(app: &App, theme: Theme, frame: &mut Frame) {
    let mode = if app.form.is_some() {
        KeyMode::Form
    } else {
        KeyMode::List
    };
    let entries = app.keymap.help(mode);
    let mut lines: Vec<Line> = entries
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(format!("{keys:>18}  "), theme.key()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "filter: state:S[,S] account:A type:T key:K attempts>N err:TEXT, or free text",
        theme.dim(),
    ));
    let close = app.keymap.hints(KeyMode::Help, &[crate::app::Action::Back]);
    let close_keys = close.first().map(|(k, _)| k.clone()).unwrap_or_default();
    let height = lines.len() as u16 + 2;
    let area = centered(frame.area(), 84, height);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(format!(" Keys ({close_keys} closes) "))),
        area,
    );
}
