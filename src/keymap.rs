//! Keys to actions: `(mode, key) -> Action`, read from the default keymap in
//! `assets/keymap` and an optional user file in the same format. Help and the
//! footer hints are generated from the same bindings, so they cannot drift
//! from what the keys do. Pure: parses text and maps keys; never reads the
//! terminal or a file (the shell hands it the user file's text).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::{Action, View};
use crate::domain::DecisionKind;

pub const DEFAULT: &str = include_str!("../assets/keymap");

/// Which bindings apply. `Any` bindings apply in every mode after the
/// mode's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMode {
    Any,
    List,
    Filter,
    Form,
    Help,
}

impl KeyMode {
    fn parse(word: &str) -> Option<KeyMode> {
        Some(match word {
            "any" => KeyMode::Any,
            "list" => KeyMode::List,
            "filter" => KeyMode::Filter,
            "form" => KeyMode::Form,
            "help" => KeyMode::Help,
            _ => return None,
        })
    }

    /// Modes where printable keys type text unless bound.
    fn types_text(self) -> bool {
        matches!(self, KeyMode::Filter | KeyMode::Form)
    }
}

/// A key as the keymap names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyName {
    Char(char),
    Enter,
    Esc,
    Tab,
    BackTab,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub name: KeyName,
    pub ctrl: bool,
}

impl Key {
    pub fn parse(text: &str) -> Option<Key> {
        let (ctrl, rest) = match text.strip_prefix("ctrl-") {
            Some(rest) if !rest.is_empty() => (true, rest),
            _ => (false, text),
        };
        let name = match rest {
            "enter" => KeyName::Enter,
            "esc" => KeyName::Esc,
            "tab" => KeyName::Tab,
            "shift-tab" | "backtab" => KeyName::BackTab,
            "backspace" => KeyName::Backspace,
            "space" => KeyName::Char(' '),
            "up" => KeyName::Up,
            "down" => KeyName::Down,
            "left" => KeyName::Left,
            "right" => KeyName::Right,
            "pgup" => KeyName::PageUp,
            "pgdn" => KeyName::PageDown,
            "home" => KeyName::Home,
            "end" => KeyName::End,
            single => {
                let mut chars = single.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyName::Char(c)
            }
        };
        Some(Key { name, ctrl })
    }

    /// The key of a terminal event; `None` for releases and repeats (only
    /// presses act, or Windows terminals would act twice) and keys the
    /// keymap cannot name.
    pub fn from_event(event: &KeyEvent) -> Option<Key> {
        if event.kind != KeyEventKind::Press {
            return None;
        }
        let name = match event.code {
            KeyCode::Char(c) => KeyName::Char(c),
            KeyCode::Enter => KeyName::Enter,
            KeyCode::Esc => KeyName::Esc,
            KeyCode::Tab if event.modifiers.contains(KeyModifiers::SHIFT) => KeyName::BackTab,
            KeyCode::Tab => KeyName::Tab,
            KeyCode::BackTab => KeyName::BackTab,
            KeyCode::Backspace => KeyName::Backspace,
            KeyCode::Up => KeyName::Up,
            KeyCode::Down => KeyName::Down,
            KeyCode::Left => KeyName::Left,
            KeyCode::Right => KeyName::Right,
            KeyCode::PageUp => KeyName::PageUp,
            KeyCode::PageDown => KeyName::PageDown,
            KeyCode::Home => KeyName::Home,
            KeyCode::End => KeyName::End,
            _ => return None,
        };
        Some(Key {
            name,
            ctrl: event.modifiers.contains(KeyModifiers::CONTROL),
        })
    }

    pub fn label(&self) -> String {
        let base = match self.name {
            KeyName::Char(' ') => "space".to_string(),
            KeyName::Char(c) => c.to_string(),
            KeyName::Enter => "enter".into(),
            KeyName::Esc => "esc".into(),
            KeyName::Tab => "tab".into(),
            KeyName::BackTab => "shift-tab".into(),
            KeyName::Backspace => "backspace".into(),
            KeyName::Up => "↑".into(),
            KeyName::Down => "↓".into(),
            KeyName::Left => "←".into(),
            KeyName::Right => "→".into(),
            KeyName::PageUp => "pgup".into(),
            KeyName::PageDown => "pgdn".into(),
            KeyName::Home => "home".into(),
            KeyName::End => "end".into(),
        };
        if self.ctrl {
            format!("ctrl-{base}")
        } else {
            base
        }
    }
}

/// Every action a key can be bound to: its name in the keymap file, the
/// action, a short hint for the footer and what help says it does.
type Bindable = (&'static str, Action, &'static str, &'static str);

fn bindable() -> Vec<Bindable> {
    use DecisionKind::*;
    vec![
        ("quit", Action::Quit, "quit", "quit the console"),
        ("help", Action::Help, "help", "this help"),
        ("next_view", Action::NextView, "next view", "next view"),
        ("prev_view", Action::PrevView, "prev view", "previous view"),
        (
            "view_queue",
            Action::ShowView(View::Queue),
            "queue",
            "triage queue: unknown, exhausted, conflict, stale reserved",
        ),
        (
            "view_all",
            Action::ShowView(View::All),
            "all",
            "all operations",
        ),
        (
            "view_drills",
            Action::ShowView(View::Drills),
            "drills",
            "drill files and their verdicts",
        ),
        (
            "view_audit",
            Action::ShowView(View::Audit),
            "audit",
            "audit trail: decisions, newest first",
        ),
        ("move_down", Action::MoveDown, "down", "next row"),
        ("move_up", Action::MoveUp, "up", "previous row"),
        ("page_down", Action::PageDown, "page down", "a screen down"),
        ("page_up", Action::PageUp, "page up", "a screen up"),
        ("first", Action::First, "newest", "newest row"),
        ("last", Action::Last, "oldest", "oldest row"),
        (
            "toggle_detail",
            Action::ToggleDetail,
            "detail",
            "show or hide the operation's detail",
        ),
        (
            "detail_down",
            Action::DetailDown,
            "scroll detail",
            "scroll the detail down",
        ),
        (
            "detail_up",
            Action::DetailUp,
            "scroll detail",
            "scroll the detail up",
        ),
        (
            "filter",
            Action::StartFilter,
            "filter",
            "filter the list (live as you type)",
        ),
        (
            "toggle_mark",
            Action::ToggleMark,
            "mark",
            "mark or unmark the row; decisions apply to marked rows",
        ),
        (
            "decide_applied",
            Action::Decide(Applied),
            "applied",
            "record applied: the effect exists",
        ),
        (
            "decide_not_applied",
            Action::Decide(NotApplied),
            "not applied",
            "record not applied: evidence that no effect occurred",
        ),
        (
            "decide_retry",
            Action::Decide(RetrySameKey),
            "retry",
            "ask a worker to retry with the same key",
        ),
        (
            "decide_cancel_retry",
            Action::Decide(CancelRetry),
            "cancel retry",
            "cancel a retry still queued",
        ),
        (
            "undo",
            Action::Undo,
            "undo",
            "undo my last decision of this session",
        ),
        ("reload", Action::Reload, "reload", "reread the ledger"),
        (
            "back",
            Action::Back,
            "back",
            "close the detail, clear marks, then the filter",
        ),
        (
            "accept",
            Action::Accept,
            "keep filter",
            "keep the filter and return to the list",
        ),
        (
            "confirm",
            Action::Confirm,
            "record",
            "record the decision if every check passes",
        ),
        ("next_field", Action::NextField, "next field", "next field"),
        (
            "prev_field",
            Action::PrevField,
            "prev field",
            "previous field",
        ),
        (
            "delete_char",
            Action::DeleteChar,
            "delete",
            "delete the last character",
        ),
        (
            "toggle_override",
            Action::ToggleOverride,
            "override",
            "override a committed effect (needs a note)",
        ),
    ]
}

/// The short hint for a bindable action in `mode` (Esc means something
/// different in each).
pub fn hint(mode: KeyMode, action: &Action) -> &'static str {
    match (mode, action) {
        (KeyMode::Form, Action::Back) => "cancel",
        (KeyMode::Filter, Action::Back) => "clear filter",
        (KeyMode::Help, Action::Back) => "close",
        _ => bindable()
            .into_iter()
            .find(|(_, a, _, _)| a == action)
            .map_or("", |(_, _, short, _)| short),
    }
}

/// What help says a bindable action does in `mode`.
pub fn describe(mode: KeyMode, action: &Action) -> &'static str {
    match (mode, action) {
        (KeyMode::Form, Action::Back) => "cancel: nothing is recorded",
        (KeyMode::Filter, Action::Back) => "clear the filter",
        (KeyMode::Help, Action::Back) => "close help",
        _ => bindable()
            .into_iter()
            .find(|(_, a, _, _)| a == action)
            .map_or("", |(_, _, _, long)| long),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub mode: KeyMode,
    pub key: Key,
    /// `None` unbinds the key (a user line with action `none`).
    pub action: Option<Action>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    pub bindings: Vec<Binding>,
}

impl Keymap {
    /// The default keymap with `user` (a keymap file's text) applied over it.
    /// Errors name the line and what is wrong.
    pub fn load(user: Option<&str>) -> Result<Keymap, String> {
        let mut keymap = Keymap {
            bindings: parse(DEFAULT).map_err(|e| format!("built-in keymap: {e}"))?,
        };
        if let Some(text) = user {
            for b in parse(text)? {
                keymap
                    .bindings
                    .retain(|old| !(old.mode == b.mode && old.key == b.key));
                keymap.bindings.push(b);
            }
        }
        Ok(keymap)
    }

    /// The built-in keymap; it is tested to parse.
    pub fn default_keymap() -> Keymap {
        Keymap::load(None).unwrap_or(Keymap {
            bindings: Vec::new(),
        })
    }

    /// The action `key` means in `mode`.
    pub fn resolve(&self, mode: KeyMode, key: Key) -> Option<Action> {
        for m in [mode, KeyMode::Any] {
            if let Some(b) = self.bindings.iter().find(|b| b.mode == m && b.key == key) {
                return b.action.clone();
            }
        }
        match key.name {
            KeyName::Char(c) if mode.types_text() && !key.ctrl => Some(Action::Input(c)),
            _ => None,
        }
    }

    /// The bindings valid in `mode`, one line per action with all its keys,
    /// in keymap order: `(keys, description)`.
    pub fn help(&self, mode: KeyMode) -> Vec<(String, &'static str)> {
        let mut out: Vec<(Action, Vec<String>)> = Vec::new();
        for b in self
            .bindings
            .iter()
            .filter(|b| b.mode == mode || b.mode == KeyMode::Any)
        {
            let Some(action) = &b.action else { continue };
            // A key the mode rebinds is shadowed for `Any`.
            if b.mode == KeyMode::Any
                && self
                    .bindings
                    .iter()
                    .any(|o| o.mode == mode && o.key == b.key)
            {
                continue;
            }
            match out.iter_mut().find(|(a, _)| a == action) {
                Some((_, keys)) => keys.push(b.key.label()),
                None => out.push((action.clone(), vec![b.key.label()])),
            }
        }
        out.into_iter()
            .map(|(a, keys)| (keys.join("/"), describe(mode, &a)))
            .collect()
    }

    /// Short hints for the footer: the first key of each of `actions` that
    /// is bound in `mode`.
    pub fn hints(&self, mode: KeyMode, actions: &[Action]) -> Vec<(String, &'static str)> {
        actions
            .iter()
            .filter_map(|a| {
                let b = self.bindings.iter().find(|b| {
                    (b.mode == mode || b.mode == KeyMode::Any) && b.action.as_ref() == Some(a)
                })?;
                Some((b.key.label(), hint(mode, a)))
            })
            .collect()
    }
}

fn parse(text: &str) -> Result<Vec<Binding>, String> {
    let table = bindable();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [mode, key, action] = words.as_slice() else {
            return Err(format!(
                "line {}: {line:?}: expected MODE KEY ACTION",
                n + 1
            ));
        };
        let mode = KeyMode::parse(mode).ok_or_else(|| {
            format!(
                "line {}: unknown mode {mode:?} (any, list, filter, form, help)",
                n + 1
            )
        })?;
        let key = Key::parse(key).ok_or_else(|| format!("line {}: unknown key {key:?}", n + 1))?;
        let action = if *action == "none" {
            None
        } else {
            let found = table.iter().find(|(name, ..)| name == action);
            let Some((_, a, ..)) = found else {
                let names: Vec<&str> = table.iter().map(|(n, ..)| *n).collect();
                return Err(format!(
                    "line {}: unknown action {action:?}; actions are {}",
                    n + 1,
                    names.join(", ")
                ));
            };
            Some(a.clone())
        };
        out.push(Binding { mode, key, action });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_keymap_parses_and_binds_the_essentials() {
        let k = Keymap::load(None).unwrap();
        let key = |s| Key::parse(s).unwrap();
        assert_eq!(k.resolve(KeyMode::List, key("j")), Some(Action::MoveDown));
        assert_eq!(k.resolve(KeyMode::Form, key("ctrl-c")), Some(Action::Quit));
        assert_eq!(
            k.resolve(KeyMode::Filter, key("j")),
            Some(Action::Input('j'))
        );
        assert_eq!(k.resolve(KeyMode::List, key("x")), None);
    }

    #[test]
    fn a_user_file_rebinds_and_unbinds() {
        let k = Keymap::load(Some("list x decide_applied\nlist a none\n")).unwrap();
        let key = |s| Key::parse(s).unwrap();
        assert_eq!(
            k.resolve(KeyMode::List, key("x")),
            Some(Action::Decide(DecisionKind::Applied))
        );
        assert_eq!(k.resolve(KeyMode::List, key("a")), None);
        assert!(
            k.help(KeyMode::List)
                .iter()
                .any(|(keys, d)| keys == "x" && d.starts_with("record applied"))
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = Keymap::load(Some("\nlist j fly")).unwrap_err();
        assert!(e.starts_with("line 2: unknown action \"fly\""), "{e}");
    }

    #[test]
    fn help_lists_only_the_mode_and_any() {
        let k = Keymap::load(None).unwrap();
        let form = k.help(KeyMode::Form);
        assert!(
            form.iter()
                .any(|(_, d)| d.starts_with("record the decision"))
        );
        assert!(!form.iter().any(|(_, d)| d.starts_with("record applied")));
        assert!(
            form.iter()
                .any(|(keys, d)| keys == "esc" && d.starts_with("cancel"))
        );
        assert!(
            form.iter()
                .any(|(keys, d)| keys == "ctrl-c" && *d == "quit the console")
        );
    }

    #[test]
    fn releases_do_not_act() {
        let mut e = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
        assert!(Key::from_event(&e).is_some());
        e.kind = KeyEventKind::Release;
        assert!(Key::from_event(&e).is_none());
    }

    proptest! {
        #[test]
        fn key_labels_parse_back(c in proptest::char::range('!', '~'), ctrl: bool) {
            let key = Key { name: KeyName::Char(c), ctrl };
            prop_assert_eq!(Key::parse(&key.label()), Some(key));
        }
    }
}
