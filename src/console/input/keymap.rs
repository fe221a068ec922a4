//! Keys to intents: `(mode, key) -> Intent`, read from the default keymap in
//! `assets/keymap` and an optional user file in the same format. Help and the
//! footer hints are generated from the same bindings and the intents' own
//! words, so they cannot drift from what the keys do. Depends on `intent`
//! alone, never on the model. Pure: parses text and maps keys; never reads
//! the terminal or a file (the shell hands it the user file's text).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

pub use crate::console::input::intent::{Intent, KeyMode, View};

pub const DEFAULT: &str = include_str!("../../../assets/keymap");

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

#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub mode: KeyMode,
    pub key: Key,
    /// `None` unbinds the key (a user line with action `none`).
    pub intent: Option<Intent>,
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

    /// The intent `key` means in `mode`.
    pub fn resolve(&self, mode: KeyMode, key: Key) -> Option<Intent> {
        for m in [mode, KeyMode::Any] {
            if let Some(b) = self.bindings.iter().find(|b| b.mode == m && b.key == key) {
                return b.intent;
            }
        }
        match key.name {
            KeyName::Char(c) if mode.types_text() && !key.ctrl => Some(Intent::Input(c)),
            _ => None,
        }
    }

    /// The bindings valid in `mode` whose intent `keep` accepts, one line
    /// per intent with all its keys, in keymap order: `(keys, description)`,
    /// worded for `view`.
    pub fn help(
        &self,
        mode: KeyMode,
        view: View,
        keep: impl Fn(Intent) -> bool,
    ) -> Vec<(String, &'static str)> {
        let mut out: Vec<(Intent, Vec<String>)> = Vec::new();
        for b in self
            .bindings
            .iter()
            .filter(|b| b.mode == mode || b.mode == KeyMode::Any)
        {
            let Some(intent) = b.intent.filter(|i| keep(*i)) else {
                continue;
            };
            // A key the mode rebinds is shadowed for `Any`.
            if b.mode == KeyMode::Any
                && self
                    .bindings
                    .iter()
                    .any(|o| o.mode == mode && o.key == b.key)
            {
                continue;
            }
            match out.iter_mut().find(|(i, _)| *i == intent) {
                Some((_, keys)) => keys.push(b.key.label()),
                None => out.push((intent, vec![b.key.label()])),
            }
        }
        // Every bound intent came from a keymap line naming it, so it has
        // words; `filter_map` only keeps the types honest.
        out.into_iter()
            .filter_map(|(i, keys)| Some((keys.join("/"), i.words_in(mode, view)?.description)))
            .collect()
    }

    /// Short hints for the footer: the first key of each of `intents` that
    /// is bound in `mode`, worded for `view`.
    pub fn hints(
        &self,
        mode: KeyMode,
        view: View,
        intents: &[Intent],
    ) -> Vec<(String, &'static str)> {
        intents
            .iter()
            .filter_map(|i| {
                let b = self
                    .bindings
                    .iter()
                    .find(|b| (b.mode == mode || b.mode == KeyMode::Any) && b.intent == Some(*i))?;
                Some((b.key.label(), i.words_in(mode, view)?.hint))
            })
            .collect()
    }
}

fn parse(text: &str) -> Result<Vec<Binding>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [mode, key, name] = words.as_slice() else {
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
        let intent = if *name == "none" {
            None
        } else {
            let Some(intent) = Intent::named(name) else {
                let names: Vec<&str> = Intent::BINDABLE
                    .iter()
                    .filter_map(|i| Some(i.words(KeyMode::Any)?.name))
                    .collect();
                return Err(format!(
                    "line {}: unknown action {name:?}; actions are {}",
                    n + 1,
                    names.join(", ")
                ));
            };
            Some(intent)
        };
        out.push(Binding { mode, key, intent });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::DecisionKind;
    use proptest::prelude::*;

    #[test]
    fn the_default_keymap_parses_and_binds_the_essentials() {
        let k = Keymap::load(None).unwrap();
        let key = |s| Key::parse(s).unwrap();
        assert_eq!(k.resolve(KeyMode::List, key("j")), Some(Intent::MoveDown));
        assert_eq!(k.resolve(KeyMode::Form, key("ctrl-c")), Some(Intent::Quit));
        assert_eq!(
            k.resolve(KeyMode::Filter, key("j")),
            Some(Intent::Input('j'))
        );
        assert_eq!(k.resolve(KeyMode::List, key("x")), None);
    }

    #[test]
    fn a_user_file_rebinds_and_unbinds() {
        let k = Keymap::load(Some("list x decide_applied\nlist a none\n")).unwrap();
        let key = |s| Key::parse(s).unwrap();
        assert_eq!(
            k.resolve(KeyMode::List, key("x")),
            Some(Intent::Decide(DecisionKind::Applied))
        );
        assert_eq!(k.resolve(KeyMode::List, key("a")), None);
        assert!(
            k.help(KeyMode::List, View::Queue, |_| true)
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
        let form = k.help(KeyMode::Form, View::Queue, |_| true);
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
