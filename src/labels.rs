//! The words and state colours that the CLI and the console both show, each
//! made in one place so the two cannot drift apart: a state's label and
//! colour, a decision's one-line text, pretty parameters, when a key
//! expires. Everything returned is sanitised ledger text; nothing here
//! touches a terminal or the store.

use chrono::{DateTime, Utc};
use ratatui::style::Color;

use crate::domain::key_expiry::{KeyExpiry, key_expiry};
use crate::domain::retry_status::RetryStatus;
use crate::domain::{
    Decision, OperationDetail, OperationRow, Probe, ProbeOutcome, RetryRequest, State, format_time,
    human_duration,
};
use crate::text::sanitize;

fn clean(text: &str) -> String {
    sanitize(text).into_owned()
}

/// A state as lists show it: `reserved (stale)` for a reservation whose
/// lease passed (it is in the triage queue), the state word otherwise.
pub fn state_label(state: &State, stale: bool) -> String {
    if stale && *state == State::Reserved {
        "reserved (stale)".to_string()
    } else {
        clean(state.as_str())
    }
}

/// A state as a detail shows it: the list's label, saying why a stale
/// reservation is stale.
pub fn state_label_long(state: &State, stale: bool) -> String {
    if stale && *state == State::Reserved {
        "reserved (stale: lease passed)".to_string()
    } else {
        state_label(state, stale)
    }
}

/// The colour of a state, for the CLI's table and the console alike.
/// Unresolved states (unknown, exhausted, a stale reservation) are yellow:
/// they wait for a person, they have not failed. Red is kept for a conflict,
/// where the receiver rejected the key.
pub fn state_color(state: &State, stale: bool) -> Color {
    match state {
        State::Unknown | State::Exhausted => Color::Yellow,
        State::Reserved if stale => Color::Yellow,
        State::Conflict => Color::Red,
        State::Reserved | State::RetryPending => Color::Cyan,
        State::Completed => Color::Green,
        State::NotApplied => Color::Blue,
        State::Unrecognized(_) => Color::Magenta,
    }
}

/// A decision's change: `unknown → completed`.
pub fn decision_change(d: &Decision) -> String {
    format!("{} → {}", clean(&d.from_state), clean(&d.to_state))
}

/// What a decision recorded beside its kind: result, evidence, note, the
/// decision it undoes; empty parts left out.
pub fn decision_particulars(d: &Decision) -> Vec<String> {
    [
        d.result_id
            .as_deref()
            .map(|r| format!("result: {}", clean(r))),
        d.evidence
            .as_deref()
            .map(|e| format!("evidence: {}", clean(e))),
        d.note.as_deref().map(|n| format!("note: {}", clean(n))),
        d.undoes.map(|u| format!("undoes #{u}")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A decision in one line, as `show`, `audit` and the console's detail
/// print it: `applied unknown → completed by alice  result: r-1`.
pub fn decision_line(d: &Decision) -> String {
    let mut line = format!(
        "{} {} by {}",
        clean(&d.decision),
        decision_change(d),
        clean(&d.operator)
    );
    for part in decision_particulars(d) {
        line.push_str("  ");
        line.push_str(&part);
    }
    line
}

/// A retry request's progress in one line, as `show` and the console's
/// detail print it: `retry request 3 by alice: claimed by host:42 (run 2,
/// until 10:15:00Z)`, or `done: report-1`, `failed: key expired ...`.
/// A request settle's worker never touched reads as its status alone.
pub fn retry_request_line(r: &RetryRequest) -> String {
    let p = &r.progress;
    let mut line = format!(
        "retry request {} by {}: {}",
        r.id,
        clean(&r.requested_by),
        clean(&r.status)
    );
    if RetryStatus::parse(&r.status) == RetryStatus::Claimed {
        if let Some(by) = &p.claimed_by {
            line.push_str(&format!(" by {}", clean(by)));
        }
        let until = p
            .claim_expires_at
            .as_deref()
            .map(|t| format!(", until {}", clean(t)))
            .unwrap_or_default();
        line.push_str(&format!(" (run {}{until})", p.runs));
    } else if p.runs > 1 {
        line.push_str(&format!(" after {} runs", p.runs));
    }
    if let Some(outcome) = &p.outcome {
        line.push_str(&format!(": {}", clean(outcome)));
    }
    line
}

/// A `retry_pending` row's request status as the list shows it in place of
/// the last event: `retry queued`, `retry running` (claimed by a worker).
pub fn retry_status(status: &str) -> String {
    match RetryStatus::parse(status) {
        RetryStatus::Claimed => "retry running".to_string(),
        other => format!("retry {}", clean(other.as_str())),
    }
}

/// What a list shows as the last thing that happened to a row: a
/// `retry_pending` row's request progress (a worker writes no event until
/// the retry ends), else its last event as stored (sanitise it to show it).
pub fn last_happened(row: &OperationRow) -> Option<String> {
    row.retry_status
        .as_deref()
        .map(retry_status)
        .or_else(|| row.last_event.clone())
}

/// A probe in one line, as `show` and the console's detail print it:
/// `found report-77 · exit 0 · 12 ms · by alice · /bin/lookup x`.
pub fn probe_line(probe: &Probe) -> String {
    let p = &probe.probe;
    let answer = match (&p.outcome, &p.result_id) {
        (ProbeOutcome::Found, Some(id)) => format!("found {}", clean(id)),
        (outcome, _) => outcome.as_str().replace('_', " "),
    };
    let command = if p.command.is_empty() {
        "nothing ran".to_string()
    } else {
        clean(&p.command)
    };
    format!(
        "{answer} · {} · {} ms · by {} · {command}",
        clean(&p.exit),
        p.duration_ms,
        clean(&p.operator)
    )
}

/// What a probe's lookup printed, on one line (cut like any long value),
/// or `None` when it printed nothing.
pub fn probe_output(p: &Probe) -> Option<String> {
    p.probe
        .output
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(long_text)
}

/// The evidence a decision cites when it rests on probe `p`, for the
/// decision form to start from: which probe, when, by whom, what ran and
/// what it answered. Sanitised, so the recorded evidence is clean too.
pub fn probe_evidence(probe: &Probe) -> String {
    let p = &probe.probe;
    let said = match p.outcome {
        ProbeOutcome::Found => format!(
            "found the effect, result id {}",
            clean(p.result_id.as_deref().unwrap_or("-"))
        ),
        ProbeOutcome::NotFound => "the receiver has no record of the key".to_string(),
        ProbeOutcome::Unknown => "could not tell".to_string(),
    };
    format!(
        "probe {} at {} by {}: lookup `{}` {}: {said}",
        probe.id,
        clean(&p.probed_at),
        clean(&p.operator),
        clean(&p.command),
        clean(&p.exit)
    )
}

/// How much of one long value (parameters, an event's detail, an error, a
/// response) is formatted for people: more than any screen holds, little
/// enough that drawing it never keeps a key waiting. A 10 MB value froze
/// the console for as long as it was formatted; JSON output keeps every
/// byte.
pub const SHOWN_BYTES: usize = 16 * 1024;

/// What ends a value cut at [`SHOWN_BYTES`].
pub fn more_bytes(left: usize) -> String {
    format!("… {left} more bytes, `settle show --format json` for all")
}

/// The first [`SHOWN_BYTES`] of `text` (cut between characters), and how
/// many bytes follow.
fn shown_part(text: &str) -> (&str, usize) {
    if text.len() <= SHOWN_BYTES {
        return (text, 0);
    }
    let mut end = SHOWN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// A value shown on one line (an event's detail, an error, a response):
/// sanitised, and cut at [`SHOWN_BYTES`] with what was left out said.
pub fn long_text(text: &str) -> String {
    match shown_part(text) {
        (all, 0) => clean(all),
        (part, left) => format!("{} {}", clean(part), more_bytes(left)),
    }
}

/// Parameters as indented JSON when they parse, as they are otherwise;
/// sanitised line by line. Past [`SHOWN_BYTES`] only the first part is
/// indented (it cannot be parsed whole) and a last line says how many bytes
/// were left out.
pub fn pretty_params(params: &str) -> Vec<String> {
    let (part, left) = shown_part(params);
    let pretty = if left > 0 {
        if part.trim_start().starts_with(['{', '[']) {
            indent_json(part)
        } else {
            part.to_string()
        }
    } else {
        serde_json::from_str::<serde_json::Value>(params)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| params.to_string())
    };
    let mut lines: Vec<String> = pretty.lines().map(clean).collect();
    if left > 0 {
        lines.push(more_bytes(left));
    }
    lines
}

/// Indents JSON text the way `serde_json::to_string_pretty` does, token by
/// token, without parsing it whole: it works on the first part of a value
/// too big to format (an unfinished string or container is fine).
fn indent_json(text: &str) -> String {
    fn newline(out: &mut String, depth: usize) {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
                // An empty container stays on one line: `{}`, `[]`.
                if let Some(close) = chars.next_if(|c| matches!(c, '}' | ']')) {
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// When the key expires, relative to `now`:
/// `2026-11-07T10:00:00Z (in 3h; created … + contract retention 1d)`.
pub fn key_expiry_text(detail: &OperationDetail, now: DateTime<Utc>) -> String {
    match key_expiry(detail) {
        KeyExpiry::Never => "never (neither the row nor the contract limits it)".to_string(),
        KeyExpiry::Unreadable(why) => format!("unknown: {}", clean(&why)),
        KeyExpiry::At { at, why } => {
            let secs = (at - now).num_seconds();
            let when = if secs > 0 {
                format!("in {}", human_duration(secs))
            } else {
                format!("{} ago, passed", human_duration(-secs))
            };
            format!("{} ({when}; {})", format_time(at), clean(&why))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{DecisionId, OperationId};

    #[test]
    fn a_retry_requests_progress_reads_in_one_clean_line() {
        use crate::domain::{RetryProgress, RetryRequest};
        let mut r = RetryRequest {
            id: 3,
            op_id: OperationId(7),
            idem_key: "k".into(),
            requested_at: "2026-11-30T10:00:00Z".into(),
            requested_by: "alice".into(),
            status: "queued".into(),
            decision_id: DecisionId(1),
            progress: RetryProgress::default(),
        };
        assert_eq!(retry_request_line(&r), "retry request 3 by alice: queued");
        r.status = "claimed".into();
        r.progress = RetryProgress {
            claimed_by: Some("host\u{1b}[2J:42".into()),
            claim_expires_at: Some("2026-11-30T10:01:00Z".into()),
            runs: 2,
            ..RetryProgress::default()
        };
        let line = retry_request_line(&r);
        assert!(!line.contains('\u{1b}'), "{line:?}");
        assert!(
            line.ends_with("(run 2, until 2026-11-30T10:01:00Z)"),
            "{line}"
        );
        r.status = "failed".into();
        r.progress.outcome = Some("exit 1: \u{7}no".into());
        let line = retry_request_line(&r);
        assert!(line.contains("failed after 2 runs: exit 1:"), "{line}");
        assert!(!line.contains('\u{7}'), "{line:?}");
        assert_eq!(retry_status("claimed"), "retry running");
    }

    #[test]
    fn only_a_stale_reservation_gets_the_stale_label() {
        assert_eq!(state_label(&State::Reserved, true), "reserved (stale)");
        assert_eq!(state_label(&State::Reserved, false), "reserved");
        assert_eq!(state_label(&State::Unknown, true), "unknown");
        assert_eq!(
            state_label_long(&State::Reserved, true),
            "reserved (stale: lease passed)"
        );
    }

    #[test]
    fn exhausted_is_unresolved_not_failed() {
        assert_eq!(state_color(&State::Exhausted, false), Color::Yellow);
        assert_eq!(
            state_color(&State::Exhausted, false),
            state_color(&State::Unknown, false)
        );
        assert_ne!(
            state_color(&State::Reserved, true),
            state_color(&State::Reserved, false)
        );
    }

    #[test]
    fn a_decision_line_names_every_recorded_part_and_is_sanitised() {
        let d = Decision {
            id: DecisionId(3),
            op_id: OperationId(1),
            decision: "applied".into(),
            from_state: "unknown".into(),
            to_state: "completed".into(),
            result_id: Some("r-1".into()),
            evidence: None,
            note: Some("bad\x1b[31m".into()),
            operator: "alice".into(),
            decided_at: "2026-11-06T12:00:00Z".into(),
            op_version: 1,
            undoes: Some(DecisionId(2)),
        };
        let line = decision_line(&d);
        assert_eq!(
            line,
            "applied unknown → completed by alice  result: r-1  note: bad␛[31m  undoes #2"
        );
    }

    #[test]
    fn params_are_pretty_when_json_and_kept_when_not() {
        assert_eq!(pretty_params(r#"{"a":1}"#), ["{", r#"  "a": 1"#, "}"]);
        assert_eq!(pretty_params("not json"), ["not json"]);
    }

    #[test]
    fn indenting_token_by_token_matches_serde() {
        let json = r#"{"a": [1, {"b": "x,\"y:{"}, [], {}], "c": null, "d": {"e": true}}"#;
        let serde =
            serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(json).unwrap())
                .unwrap();
        assert_eq!(indent_json(json), serde);
    }

    #[test]
    fn ten_megabytes_of_params_are_cut_with_a_line_saying_so() {
        let items: Vec<String> = (0..1_000_000).map(|i| format!(r#"{{"n":{i}}}"#)).collect();
        let params = format!(r#"{{"items":[{}]}}"#, items.join(","));
        assert!(params.len() > 10_000_000);
        let lines = pretty_params(&params);
        let shown: usize = lines.iter().map(String::len).sum();
        assert!(shown < 4 * SHOWN_BYTES, "{shown} bytes formatted");
        assert_eq!(lines[..3], ["{", r#"  "items": ["#, "    {"]);
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("… ")
                && last.ends_with(" more bytes, `settle show --format json` for all"),
            "{last}"
        );
        let left: usize = last[4..].split(' ').next().unwrap().parse().unwrap();
        assert_eq!(left, params.len() - SHOWN_BYTES);
    }

    #[test]
    fn a_long_text_is_cut_between_characters() {
        let text = "é".repeat(SHOWN_BYTES);
        let shown = long_text(&text);
        assert!(
            shown.ends_with(&more_bytes(SHOWN_BYTES)),
            "{}",
            &shown[shown.len() - 80..]
        );
        assert_eq!(long_text("short"), "short");
    }
}
