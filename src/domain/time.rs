//! Ledger times: the forms settle reads (`parse_time`), the one it writes
//! (`format_time`) and how long ago something was (`age`). Pure: `now` is
//! always passed in, never read from the clock.

use chrono::{DateTime, SecondsFormat, Utc};

/// Formats a time the way the ledger stores it: RFC 3339, UTC, `Z`.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The time forms [`parse_time`] reads, for messages that flag a time it
/// cannot (docs/ledger-v1.md lists the same).
pub const TIME_FORMATS: &str =
    "settle reads RFC 3339 with Z or an offset, YYYY-MM-DD HH:MM:SS in UTC, or epoch seconds";

/// Parses a ledger time. Services are not all careful, so besides RFC 3339
/// with any offset it takes SQLite's `datetime('now')` form (UTC) and epoch
/// seconds: the forms the store's SQL compares as instants too (see
/// `store::read::instant_sql`), so a lease is stale in both or in neither.
/// Returns UTC; `None` for text that is not a time.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f") {
        return Some(t.and_utc());
    }
    // Epoch seconds, as the store's SQL reads them: digits, maybe a fraction.
    let epoch = text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_digit() || c == '.');
    let seconds: f64 = text.parse().ok().filter(|_| epoch)?;
    DateTime::from_timestamp(seconds.floor() as i64, 0)
}

/// A span of seconds in the largest unit that fits: `45s`, `12m`, `3h`,
/// `9d`; negative spans (the future) keep their sign.
pub fn human_duration(secs: i64) -> String {
    let (sign, secs) = if secs < 0 { ("-", -secs) } else { ("", secs) };
    let text = match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    format!("{sign}{text}")
}

/// How long ago `time` was, as [`human_duration`] puts it; `?` for text
/// that is not a time.
pub fn age(time: &str, now: DateTime<Utc>) -> String {
    match parse_time(time) {
        Some(t) => human_duration((now - t).num_seconds()),
        None => "?".to_string(),
    }
}

/// Reads a span as an operator writes one: a whole number and a unit,
/// `90s`, `30m`, `4h`, `2d`, or several in a row (`1h30m`). `None` for
/// anything else, a span of zero among them.
pub fn parse_span(text: &str) -> Option<std::time::Duration> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        let n: u64 = digits.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        digits.clear();
    }
    (digits.is_empty() && total > 0).then(|| std::time::Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::parse_span;
    use std::time::Duration;

    #[test]
    fn a_span_is_numbers_with_units_and_nothing_else() {
        let secs = |t: &str| parse_span(t).map(|d| d.as_secs());
        assert_eq!(secs("90s"), Some(90));
        assert_eq!(secs("4h"), Some(4 * 3600));
        assert_eq!(secs(" 1h30m "), Some(5400));
        assert_eq!(secs("2d"), Some(172_800));
        for bad in [
            "",
            "4",
            "h",
            "0s",
            "1.5h",
            "-1h",
            "1w",
            "4 h",
            "99999999999999999999d",
        ] {
            assert_eq!(parse_span(bad), None, "{bad:?}");
        }
        assert_eq!(parse_span("1s"), Some(Duration::from_secs(1)));
    }
}
