//! A drill case whose attempts came from several callers at once (the
//! concurrent case of `settle drill run`, whose attempts carry `caller`):
//! each caller's attempts in a column of its own on one time axis, so
//! which calls overlapped, and which of them was answered with which
//! result id, reads across a row. Time runs down from the case's first
//! call; a `│` marks a call still in flight. Untrusted text passes through
//! `clean`; a case of one caller (every reference drill's) has no columns.

use chrono::{DateTime, Utc};
use ratatui::text::{Line, Span};
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::draw::clean;
use super::theme::Theme;
use crate::domain::parse_time;
use crate::drill::{DrillAttempt, DrillCase};
use crate::text::fit;

/// The time column: `+12345ms` and two spaces.
const TIME: usize = 10;

/// One thing that happened to a caller's call at one moment.
struct Moment {
    at: DateTime<Utc>,
    column: usize,
    text: String,
}

/// The caller that made `attempt`, when the file says.
fn caller(attempt: &DrillAttempt) -> Option<i64> {
    attempt.extra.get("caller").and_then(Value::as_i64)
}

/// The callers of `case`, in number order; none unless two or more.
fn callers(case: &DrillCase) -> Vec<i64> {
    let mut callers: Vec<i64> = case.attempts.iter().filter_map(caller).collect();
    callers.sort_unstable();
    callers.dedup();
    if callers.len() < 2 {
        callers.clear();
    }
    callers
}

/// The columns, headed by the callers, `width` terminal columns wide in
/// all; `None` for a case of fewer than two callers or whose attempts have
/// no readable times (the timeline below lists them all the same).
pub fn lines(theme: Theme, case: &DrillCase, width: usize) -> Option<Vec<Line<'static>>> {
    let callers = callers(case);
    if callers.is_empty() {
        return None;
    }
    let moments = moments(case, &callers);
    let origin = moments.iter().map(|m| m.at).min()?;
    let cell = (width.saturating_sub(2 + TIME) / callers.len()).max(6);
    let mut out = vec![Line::styled(
        "  callers side by side, time from the first call",
        theme.dim(),
    )];
    let header: String = callers
        .iter()
        .map(|c| pad(&format!("caller {c}"), cell))
        .collect();
    out.push(Line::styled(
        format!("  {}{header}", pad("", TIME)),
        theme.title(),
    ));
    let flights = flights(case, &callers);
    let mut at = 0;
    while at < moments.len() {
        let when = moments[at].at;
        let mut cells = vec![String::new(); callers.len()];
        while let Some(m) = moments.get(at).filter(|m| m.at == when) {
            let cell = &mut cells[m.column];
            if !cell.is_empty() {
                cell.push_str(", ");
            }
            cell.push_str(&m.text);
            at += 1;
        }
        for (column, cell) in cells.iter_mut().enumerate() {
            let flying = flights
                .iter()
                .any(|(c, start, end)| *c == column && *start < when && when < *end);
            if cell.is_empty() && flying {
                cell.push('│');
            }
        }
        let ms = (when - origin).num_milliseconds();
        let row: String = cells.iter().map(|c| pad(c, cell)).collect();
        out.push(Line::from(vec![
            Span::styled(format!("  {}", pad(&format!("+{ms}ms"), TIME)), theme.dim()),
            Span::raw(row.trim_end().to_string()),
        ]));
    }
    Some(out)
}

/// Each call's start and end, and each event of a call that names an
/// effect, in the column of its caller, by time (then column).
fn moments(case: &DrillCase, callers: &[i64]) -> Vec<Moment> {
    let mut moments = Vec::new();
    let column = |attempt: &DrillAttempt| {
        let c = caller(attempt)?;
        callers.iter().position(|x| *x == c)
    };
    for attempt in &case.attempts {
        let Some(column) = column(attempt) else {
            continue;
        };
        let n = attempt.attempt;
        if let Some(at) = attempt.started_at.as_deref().and_then(parse_time) {
            let text = format!("#{n} call");
            moments.push(Moment { at, column, text });
        }
        if let Some(at) = attempt.ended_at.as_deref().and_then(parse_time) {
            // The result id a call was given says the most in the
            // fewest columns; a call given none says how it ended.
            let id = attempt
                .response
                .as_ref()
                .and_then(|r| r.get("result_id"))
                .and_then(Value::as_str);
            let said = id.or(attempt.result.as_deref()).unwrap_or("ended");
            let text = format!("→ {}", clean(said));
            moments.push(Moment { at, column, text });
        }
        // Which call made the effect and which were replayed it: the
        // events naming an effect (the rest repeat the call's end).
        for event in case.events.iter().filter(|e| e.attempt == Some(n)) {
            let at = event.at.as_deref().and_then(parse_time);
            if let Some((at, id)) = at.zip(event.effect_id()) {
                let text = format!("{} {}", clean(&event.event), clean(&id));
                moments.push(Moment { at, column, text });
            }
        }
    }
    moments.sort_by_key(|m| (m.at, m.column));
    moments
}

/// Each call's column and the span it was in flight.
fn flights(case: &DrillCase, callers: &[i64]) -> Vec<(usize, DateTime<Utc>, DateTime<Utc>)> {
    case.attempts
        .iter()
        .filter_map(|a| {
            let column = callers.iter().position(|x| Some(*x) == caller(a))?;
            let start = parse_time(a.started_at.as_deref()?)?;
            let end = parse_time(a.ended_at.as_deref()?)?;
            Some((column, start, end))
        })
        .collect()
}

/// `text` cut to `width - 1` columns and padded to `width`: a space
/// always parts two cells.
fn pad(text: &str, width: usize) -> String {
    let cut = fit(text, width.saturating_sub(1));
    let room = width.saturating_sub(cut.width());
    format!("{cut}{}", " ".repeat(room))
}
