//! Makes untrusted text (anything read from a ledger or a drill file) safe to
//! put on a terminal: control characters and escape sequences never reach it
//! intact. Pure; used by every printer and by the console's renderer.

use std::borrow::Cow;

/// Replaces every control character (C0, DEL, C1, and the Unicode
/// bidirectional overrides that can reorder what a reader sees) with a
/// visible stand-in. Newlines and tabs become a space-like marker too: one
/// field stays on one line. Returns the input untouched when it is clean.
///
/// The stand-ins cannot be forged: a stand-in glyph (`␛`, `⏎`, …) already in
/// the text is itself written as `<U+241B>`, and a literal `<U+` as
/// `<U+003C>U+`, so `␛` on screen always means a real escape and every
/// `<U+XXXX>` is a marker: hostile text cannot pass for a harmless one.
pub fn sanitize(input: &str) -> Cow<'_, str> {
    if !input.chars().any(is_unsafe) && !input.contains("<U+") {
        return Cow::Borrowed(input);
    }
    let mut out = String::with_capacity(input.len() + 8);
    for (i, c) in input.char_indices() {
        if is_unsafe(c) {
            out.push_str(&stand_in(c));
        } else if c == '<' && input[i..].starts_with("<U+") {
            out.push_str(&code_point('<'));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Serialised JSON made safe for a terminal without changing a value:
/// serde escapes C0 controls, but C1 controls (an 8-bit CSI) and
/// bidirectional overrides pass through as they are; each becomes a
/// `\uXXXX` escape, which JSON reads back as the same character. Such
/// characters can only be inside strings, so the structure's own line
/// breaks stay.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c != '\n' && is_control(c);
    if !json.chars().any(unsafe_char) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// 1-based line and column of byte `offset` in `text`, for messages
/// about a config file.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = head(text, offset);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// At most `max_bytes` of `s`, cut at a character boundary: what a cell a
/// few dozen columns wide can show, so a megabyte value is not sanitised
/// in full on every frame only to be cut.
pub fn head(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Cuts `s` to at most `width` terminal columns, ending in `…` when cut,
/// so a shortened value never passes for a whole one.
pub fn fit(s: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// [`fit`], then padded with spaces to exactly `width` columns.
pub fn pad(s: &str, width: usize) -> String {
    let mut out = fit(s, width);
    let used = unicode_width::UnicodeWidthStr::width(out.as_str());
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(used)));
    out
}

/// What [`sanitize`] replaces: controls, and glyphs that would pass for
/// its own stand-ins.
fn is_unsafe(c: char) -> bool {
    is_control(c) || is_stand_in_glyph(c)
}

/// Characters that act on the terminal or reorder what the reader sees.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The glyphs [`stand_in`] draws (the Control Pictures block, `⏎`, `⇥`):
/// when the text itself holds one, it is marked, never shown as is.
fn is_stand_in_glyph(c: char) -> bool {
    matches!(c, '\u{2400}'..='\u{243F}' | '⏎' | '⇥')
}

/// `<U+XXXX>`: the marker for a character shown by its code point.
fn code_point(c: char) -> String {
    format!("<U+{:04X}>", c as u32)
}

fn stand_in(c: char) -> String {
    match c {
        '\n' => "⏎".to_string(),
        '\t' => "⇥".to_string(),
        '\u{1b}' => "␛".to_string(),
        c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32)
            .map(String::from)
            .unwrap_or_else(|| "�".to_string()),
        '\u{7f}' => "␡".to_string(),
        c => code_point(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_cuts_at_a_character_boundary() {
        assert_eq!(head("abc", 10), "abc");
        assert_eq!(head("aé", 2), "a", "é is two bytes");
        assert_eq!(head(&"x".repeat(5_000_000), 1024).len(), 1024);
    }

    #[test]
    fn escape_sequences_are_defused() {
        let evil = "report\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m";
        let clean = sanitize(evil);
        assert!(!clean.chars().any(|c| c.is_control()), "{clean:?}");
        assert!(clean.contains("␛[2J"));
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(
            sanitize("acct-42/create_report"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn bidi_overrides_are_visible() {
        assert_eq!(sanitize("a\u{202E}b"), "a<U+202E>b");
    }

    #[test]
    fn a_literal_stand_in_is_marked_not_mistaken_for_a_control() {
        assert_eq!(sanitize("a\u{1b}b"), "a␛b");
        assert_eq!(sanitize("a␛b"), "a<U+241B>b");
        assert_eq!(sanitize("x⏎y⇥"), "x<U+23CE>y<U+21E5>");
        assert_eq!(sanitize("<U+202E>"), "<U+003C>U+202E>");
        assert_eq!(sanitize("a<b"), "a<b");
    }

    #[test]
    fn fit_marks_what_it_cuts() {
        assert_eq!(fit("create_report", 13), "create_report");
        assert_eq!(fit("create_report", 8), "create_…");
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(fit("日本語", 4), "日…");
    }

    proptest::proptest! {
        #[test]
        fn fit_never_exceeds_the_width(s in ".{0,40}", w in 0usize..30) {
            let clean = sanitize(&s);
            proptest::prop_assert!(unicode_width::UnicodeWidthStr::width(fit(&clean, w).as_str()) <= w);
        }

        /// Two different texts never look the same once sanitised: a
        /// forged stand-in cannot pass for a real control character.
        #[test]
        fn sanitizing_never_merges_two_texts(
            a in "[a<U+0-9A-F>\u{1b}\u{202E}\n␛⏎]{0,8}",
            b in "[a<U+0-9A-F>\u{1b}\u{202E}\n␛⏎]{0,8}",
        ) {
            if a != b {
                proptest::prop_assert_ne!(sanitize(&a), sanitize(&b));
            }
        }

        #[test]
        fn sanitized_text_has_no_controls(s in ".*") {
            let clean = sanitize(&s);
            proptest::prop_assert!(!clean.chars().any(is_control));
        }
    }
}
