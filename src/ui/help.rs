//! The help popup, generated from the keymap: only the keys valid in the
//! mode the operator came from (the list, or the decision form) and, in
//! the list, only those that act in the view on screen (the footer's rule).
//! Below them, the filter's terms and, while the console takes the mouse,
//! what it does (and that Shift still selects text).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::draw::centered;
use super::theme::Theme;
use crate::app::App;
use crate::console::input::keymap::KeyMode;
use crate::text::fit;

pub fn render(app: &App, theme: Theme, frame: &mut Frame) {
    let mode = if app.form().is_some() {
        KeyMode::Form
    } else {
        KeyMode::List
    };
    let entries = app.keymap.help(mode, app.view, |intent| {
        super::footer::advertised(app, mode, intent)
    });
    let key_width = entries
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let close = app.keymap.hints(
        KeyMode::Help,
        app.view,
        &[crate::console::input::intent::Intent::Back],
    );
    let close_keys = close.first().map(|(k, _)| k.clone()).unwrap_or_default();
    let screen = frame.area();
    let mut notes =
        vec!["filter: state:S[,S] account:A type:T key:K attempts>N err:TEXT, or free text"];
    if app.mouse {
        notes.push("mouse: wheel scrolls, click picks a row or tab; shift+drag selects text");
    }
    // One column when it fits; two side by side on a short terminal, so
    // every key stays visible at 80x24.
    let footer = 1 + notes.len();
    let fits = entries.len() + footer + 2 <= usize::from(screen.height);
    let columns = if fits { 1 } else { 2 };
    let per_column = entries.len().div_ceil(columns);
    let height = u16::try_from(per_column + footer + 2).unwrap_or(u16::MAX);
    let area = centered(screen, if fits { 84 } else { screen.width }, height);
    frame.render_widget(Clear, area);
    let block = Block::bordered().title(format!(" Keys ({close_keys} closes) "));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(footer as u16)]).areas(inner);
    let cells = Layout::horizontal(vec![Constraint::Fill(1); columns]).split(body);
    for (chunk, cell) in entries.chunks(per_column.max(1)).zip(cells.iter()) {
        let text_width = usize::from(cell.width).saturating_sub(key_width + 2);
        let lines: Vec<Line> = chunk
            .iter()
            .map(|(keys, what)| {
                Line::from(vec![
                    Span::styled(format!("{keys:>key_width$}  "), theme.key()),
                    Span::raw(fit(what, text_width)),
                ])
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), *cell);
    }
    let notes = notes
        .into_iter()
        .map(|note| Line::styled(fit(note, usize::from(foot.width)), theme.dim()));
    frame.render_widget(
        Paragraph::new(
            std::iter::once(Line::raw(""))
                .chain(notes)
                .collect::<Vec<_>>(),
        ),
        foot,
    );
}
