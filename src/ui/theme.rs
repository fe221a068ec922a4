//! Styles for every element, in one place. Under NO_COLOR the theme uses only
//! bold, dim, underline and reverse, so nothing depends on colour to be read
//! (states and verdicts also carry words).

use ratatui::style::{Color, Modifier, Style};

use crate::domain::State;
use crate::drill::Verdict;
use crate::labels;

#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn title(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    pub fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn marked(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn pass(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn fail(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn note(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn read_only(self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::REVERSED)
    }

    pub fn live(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn focus(self) -> Style {
        Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD)
    }

    /// A state's colour, the CLI's too: [`labels::state_color`].
    pub fn state(self, state: &State) -> Style {
        self.row_state(state, false)
    }

    /// A row's state, yellow when it is a stale reservation (it waits in
    /// the triage queue).
    pub fn row_state(self, state: &State, stale: bool) -> Style {
        self.fg(labels::state_color(state, stale))
    }
}

impl Theme {
    /// A duplicate stands out; a case the caller ended without knowing is
    /// flagged; the words carry the meaning without colour.
    pub fn verdict(self, verdict: Verdict) -> Style {
        match verdict {
            Verdict::Safe => self.pass(),
            Verdict::DuplicateEffect => self.fail(),
            Verdict::Unresolved | Verdict::Conflict => self.note(),
        }
    }
}
