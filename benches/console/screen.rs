//! Reading settle's screen the way a user reads it: which operation ids the
//! list shows, which row is selected, what the filter prompt holds, what the
//! header counts say. The only place that knows the screen's layout, so a
//! redesign of the console means changing this file only.

/// The ids of the list rows on screen, top to bottom: lines that start
/// (after borders) with a number and mention an account.
pub fn row_ids(s: &vt100::Screen) -> Vec<i64> {
    s.contents()
        .lines()
        .filter(|l| l.contains("acct-"))
        .filter_map(|l| {
            let t = l.trim_start_matches(|c: char| c == '│' || c.is_whitespace());
            let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The id of the highlighted row: the first list row drawn with a
/// background colour or reversed.
pub fn selected_id(s: &vt100::Screen) -> Option<i64> {
    let line = s.contents_between(selected_line(s)?, 0, selected_line(s)?, s.size().1);
    let t = line.trim_start_matches(|c: char| c == '│' || c.is_whitespace());
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The screen line of the highlighted list row (a group lists one id
/// once per ledger, so its cursor is told by where it is drawn).
pub fn selected_line(s: &vt100::Screen) -> Option<u16> {
    let (rows, cols) = s.size();
    (0..rows).find(|&r| {
        s.contents_between(r, 0, r, cols).contains("acct-")
            && (1..8).any(|c| {
                s.cell(r, c)
                    .is_some_and(|cell| cell.inverse() || cell.bgcolor() != vt100::Color::Default)
            })
    })
}

/// What the filter prompt holds (the text after the `/` that starts a
/// screen line), if the prompt is open.
pub fn prompt(s: &vt100::Screen) -> Option<String> {
    s.contents().lines().rev().find_map(|l| {
        let rest = l.strip_prefix('/')?;
        let end = rest.find(['▏', '│']).unwrap_or(rest.len());
        let text = rest[..end].split("  ").next().unwrap_or("");
        Some(text.trim_end().to_string())
    })
}

/// The number the header shows after `word ` (e.g. `unknown 1,234`), with
/// digit-group separators dropped; None while it is not shown.
pub fn header_count(s: &vt100::Screen, word: &str) -> Option<u64> {
    let text = s.contents();
    let header: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
    let at = header.find(&format!("{word} "))? + word.len() + 1;
    let digits: String = header[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | '_' | '\u{202f}' | '\''))
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether the first rows on screen are `expected` (or all of them when
/// fewer): the view shows what the user asked for.
pub fn shows(s: &vt100::Screen, expected: &[i64]) -> bool {
    let ids = row_ids(s);
    !expected.is_empty()
        && ids.len() >= expected.len().min(2)
        && ids.iter().zip(expected).take(2).all(|(a, b)| a == b)
}
