//! The detail pane: one operation's fields, parameters, key expiry and
//! lease, one timeline of attempts and events with the gaps between them,
//! the decision history and the evidence summary. Beside the list when the
//! terminal is wide, below it when narrow.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::draw::{clean, duration};
use super::theme::Theme;
use crate::app::{DetailPane, DrillsPane};
use crate::domain::{Malformed, OperationDetail, evidence, parse_time};
use crate::labels;

/// What an operation's detail is read against: the clock (ages, leases,
/// deadlines) and the loaded drills, which name the case it came from.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub now: DateTime<Utc>,
    pub drills: &'a DrillsPane,
}

pub fn render(
    pane: Option<&DetailPane>,
    ctx: Context,
    theme: Theme,
    frame: &mut Frame,
    area: Rect,
) {
    let block = Block::bordered();
    let Some(pane) = pane else {
        frame.render_widget(Paragraph::new("no operation selected").block(block), area);
        return;
    };
    let Some(detail) = &pane.detail else {
        frame.render_widget(
            Paragraph::new(format!("reading operation {}…", pane.id)).block(block),
            area,
        );
        return;
    };
    let paragraph = Paragraph::new(lines(ctx, theme, detail))
        .block(block.title(format!(" #{} detail (J/K scroll) ", shown_id(pane, detail))))
        .wrap(Wrap { trim: false });
    // Never scroll past the end: the last screenful stays in view.
    let inner = area.height.saturating_sub(2);
    let content =
        u16::try_from(paragraph.line_count(area.width.saturating_sub(2))).unwrap_or(u16::MAX);
    let scroll = pane.scroll.min(content.saturating_sub(inner));
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}

/// The operation's id as its own ledger has it: `NAME:ID` in a group.
fn shown_id(pane: &DetailPane, detail: &crate::domain::OperationDetail) -> String {
    match &detail.operation.origin {
        Some(origin) => clean(&origin.to_string()),
        None => pane.id.to_string(),
    }
}

fn field(theme: Theme, name: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<12}"), theme.dim()),
        Span::raw(value),
    ])
}

fn heading(theme: Theme, text: &str) -> Line<'static> {
    Line::from(Span::styled(text.to_string(), theme.title()))
}

/// `2026-11-06T10:15:00Z (in 3h)` / `(5m ago)`.
fn when(now: DateTime<Utc>, time: Option<&str>, none: &str) -> String {
    match time {
        None => none.to_string(),
        Some(t) => match parse_time(t) {
            Some(at) => {
                let secs = (at - now).num_seconds();
                if secs >= 0 {
                    format!("{} (in {})", clean(t), duration(secs))
                } else {
                    format!("{} ({} ago, passed)", clean(t), duration(-secs))
                }
            }
            None => format!("{} (not a time)", clean(t)),
        },
    }
}

/// The drill case an operation was imported from: `RUN/CASE` when a
/// loaded drill file's import would write this key, else the case a
/// synthetic key (`drill:<case>:<fingerprint>`) names.
fn drill_case(drills: &DrillsPane, op: &crate::domain::Operation) -> Option<String> {
    drills
        .case_of_operation(&op.account, &op.op_type, &op.idem_key)
        .or_else(|| {
            let rest = op.idem_key.strip_prefix("drill:")?;
            let end = rest.rfind(":sha256:").or_else(|| rest.rfind(':'))?;
            Some(rest.get(..end)?.to_string())
        })
}

pub fn lines(ctx: Context, theme: Theme, detail: &OperationDetail) -> Vec<Line<'static>> {
    let op = &detail.operation;
    let mut out = vec![
        Line::from(Span::styled(clean(&op.natural_key()), theme.title())),
        field(
            theme,
            "state",
            labels::state_label_long(&op.state, op.is_stale_reservation(ctx.now)),
        ),
        field(theme, "version", op.version.to_string()),
    ];
    if let Some(case) = drill_case(ctx.drills, op) {
        out.push(field(
            theme,
            "drill",
            format!("from drill case {}", clean(&case)),
        ));
    }
    malformed_lines(theme, detail, &mut out);
    out.push(Line::raw(""));
    // What the events prove comes first, then what the receivers said when
    // asked: it is what the operator decides on.
    evidence_lines(ctx.now, theme, detail, &mut out);
    probe_lines(theme, detail, &mut out);

    out.push(Line::raw(""));
    out.extend([
        field(
            theme,
            "result id",
            op.result_id.as_deref().map_or("—".to_string(), clean),
        ),
        field(
            theme,
            "attempts",
            format!("{} of {}", detail.attempts_used(), op.max_attempts),
        ),
        field(theme, "fingerprint", clean(&op.fingerprint)),
        field(
            theme,
            "key expires",
            labels::key_expiry_text(detail, ctx.now),
        ),
        field(
            theme,
            "lease",
            when(ctx.now, op.lease_expires_at.as_deref(), "—"),
        ),
        field(
            theme,
            "deadline",
            when(ctx.now, op.deadline_at.as_deref(), "none"),
        ),
        field(theme, "contract", detail.contract_summary()),
        field(theme, "proof", clean(&detail.contract_source())),
        field(theme, "created", clean(&op.created_at)),
        field(theme, "updated", clean(&op.updated_at)),
        Line::raw(""),
    ]);

    timeline_lines(theme, detail, &mut out);

    decision_lines(theme, detail, &mut out);
    out.push(Line::raw(""));

    out.push(heading(theme, "Params"));
    match &op.params {
        None => out.push(Line::styled("  not retained by the service", theme.dim())),
        Some(p) => {
            for line in labels::pretty_params(p) {
                out.push(Line::raw(format!("  {line}")));
            }
        }
    }
    out
}

/// The warnings about cells that did not read as stored, and whether they
/// stop a decision: a service wrote the ledger with plain SQL, so a bad
/// cell is shown for what it is rather than hiding its row.
fn malformed_lines(theme: Theme, detail: &OperationDetail, out: &mut Vec<Line<'static>>) {
    let op = &detail.operation;
    if !op.malformed.is_empty() {
        out.push(Line::styled(
            format!("! malformed: {}", Malformed::describe(&op.malformed)),
            theme.fail(),
        ));
        if let Some(bad) = op.malformed_identity() {
            out.push(Line::styled(
                format!("! no decision: {}", bad.refusal()),
                theme.fail(),
            ));
        }
    }
    for line in &detail.history_malformed {
        out.push(Line::styled(format!("! malformed: {line}"), theme.fail()));
    }
}

/// The Evidence section: what the events prove, and the suggestion.
fn evidence_lines(
    now: DateTime<Utc>,
    theme: Theme,
    detail: &OperationDetail,
    out: &mut Vec<Line<'static>>,
) {
    let summary = evidence::summarize(detail, now);
    out.push(heading(theme, "Evidence"));
    for fact in &summary.facts {
        out.push(Line::raw(format!("  • {}", labels::long_text(fact))));
    }
    out.push(Line::from(vec![
        Span::styled("  → ", theme.note()),
        Span::styled(clean(&summary.suggestion), theme.note()),
    ]));
}

/// The Decisions section: each decision's one line, then the retry
/// requests they made.
fn decision_lines(theme: Theme, detail: &OperationDetail, out: &mut Vec<Line<'static>>) {
    out.push(heading(theme, "Decisions"));
    if detail.decisions.is_empty() {
        out.push(Line::styled("  none", theme.dim()));
    }
    for d in &detail.decisions {
        out.push(Line::raw(format!(
            "  {} {}",
            short_time(&d.decided_at),
            labels::decision_line(d)
        )));
    }
    for r in &detail.retry_requests {
        out.push(Line::raw(format!("  {}", labels::retry_request_line(r))));
    }
}

/// The Probes section: what the receivers answered, newest last, each
/// with what its lookup printed (untrusted: sanitised, one line). Left out
/// when nobody asked, so the fields keep their place.
fn probe_lines(theme: Theme, detail: &OperationDetail, out: &mut Vec<Line<'static>>) {
    if detail.probes.is_empty() {
        return;
    }
    out.push(Line::raw(""));
    out.push(heading(theme, "Probes"));
    for p in &detail.probes {
        out.push(Line::raw(format!(
            "  {} {}",
            short_time(&p.probe.probed_at),
            labels::probe_line(p)
        )));
        if let Some(output) = labels::probe_output(p) {
            out.push(Line::styled(format!("    output: {output}"), theme.dim()));
        }
    }
}

/// The Timeline section: attempts and events in time order, each with the
/// gap since the one before.
fn timeline_lines(theme: Theme, detail: &OperationDetail, out: &mut Vec<Line<'static>>) {
    out.push(heading(theme, "Timeline"));
    let timeline = timeline(detail);
    if timeline.is_empty() {
        out.push(Line::styled(
            "  no attempts or events recorded",
            theme.dim(),
        ));
    }
    let mut previous: Option<DateTime<Utc>> = None;
    for (at, text) in timeline {
        let parsed = parse_time(&at);
        let gap = match (previous, parsed) {
            (Some(p), Some(t)) => format!("+{}", duration((t - p).num_seconds())),
            _ => String::new(),
        };
        if parsed.is_some() {
            previous = parsed;
        }
        out.push(Line::from(vec![
            Span::styled(format!("  {} ", short_time(&at)), theme.dim()),
            Span::styled(format!("{gap:>5} "), theme.dim()),
            Span::raw(text),
        ]));
    }
    out.push(Line::raw(""));
}

/// `MM-DD HH:MM:SS` of a ledger time, or the text as it is.
fn short_time(t: &str) -> String {
    match parse_time(t) {
        Some(at) => at.format("%m-%d %H:%M:%S").to_string(),
        None => clean(t),
    }
}

/// One line of the timeline, with what orders it.
struct Moment {
    at: Option<DateTime<Utc>>,
    /// Attempt number; events outside an attempt sort after those at the
    /// same time.
    attempt: i64,
    /// A start, then its events, then its end, when they share a time.
    rank: u8,
    seq: usize,
    text_at: String,
    text: String,
}

/// Attempts and events merged in time order: (time, text).
fn timeline(detail: &OperationDetail) -> Vec<(String, String)> {
    let mut items: Vec<Moment> = Vec::new();
    for (seq, a) in detail.attempts.iter().enumerate() {
        items.push(Moment {
            at: parse_time(&a.started_at),
            attempt: a.attempt,
            rank: 0,
            seq,
            text_at: a.started_at.clone(),
            text: format!("attempt {} started", a.attempt),
        });
        let (at, text_at, text) = match &a.ended_at {
            Some(end) => {
                let mut text =
                    format!("attempt {} ended: {}", a.attempt, clean(a.outcome.as_str()));
                if let Some(e) = &a.error {
                    text.push_str(&format!(" ({})", labels::long_text(e)));
                }
                (parse_time(end), end.clone(), text)
            }
            None => (
                None,
                String::new(),
                format!(
                    "attempt {}: {} (no end recorded)",
                    a.attempt,
                    clean(a.outcome.as_str())
                ),
            ),
        };
        items.push(Moment {
            at,
            attempt: a.attempt,
            rank: 2,
            seq,
            text_at,
            text,
        });
    }
    for (seq, e) in detail.events.iter().enumerate() {
        let mut text = match e.attempt {
            Some(n) => format!("[{n}] {}", clean(&e.event)),
            None => clean(&e.event),
        };
        if let Some(d) = &e.detail {
            text.push_str(&format!(" {}", labels::long_text(d)));
        }
        items.push(Moment {
            at: parse_time(&e.at),
            attempt: e.attempt.unwrap_or(i64::MAX),
            rank: 1,
            seq,
            text_at: e.at.clone(),
            text,
        });
    }
    items.sort_by_key(|m| (m.at.is_none(), m.at, m.attempt, m.rank, m.seq));
    items.into_iter().map(|m| (m.text_at, m.text)).collect()
}

#[cfg(test)]
mod tests {
    use crate::app::testkit::{Harness, fixture};
    use crate::domain::NewEvent;
    use crate::labels::{SHOWN_BYTES, more_bytes};

    /// 10 MB of parameters, a 1 MB error and a 1 MB event detail: the
    /// detail draws the first part of each and says what it left out,
    /// instead of formatting megabytes on every frame, which would stall
    /// the keyboard.
    #[test]
    fn a_detail_with_10_mb_of_params_draws_a_capped_part_and_says_so() {
        let mut op = fixture().pop().unwrap();
        let items: Vec<String> = (0..1_000_000).map(|i| format!(r#"{{"n":{i}}}"#)).collect();
        let params = format!(r#"{{"items":[{}]}}"#, items.join(","));
        assert!(params.len() > 10_000_000);
        op.params = Some(params.clone());
        op.attempts[0].error = Some("E".repeat(1 << 20));
        op.events.push(NewEvent {
            attempt: Some(1),
            at: "2026-11-06T10:00:31Z".into(),
            event: "provider_error".into(),
            detail: Some("D".repeat(1 << 20)),
        });
        let mut h = Harness::with(&[op]);
        h.receive(crate::app::Msg::Resize(100, 30));
        h.keys("enter");

        let pane = h.app.detail.as_ref().unwrap();
        let detail = pane.detail.as_ref().unwrap();
        let ctx = super::Context {
            now: h.app.now,
            drills: &h.app.drills,
        };
        let lines = super::lines(ctx, crate::ui::theme::Theme { color: false }, detail);
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let formatted: usize = text.iter().map(String::len).sum();
        assert!(formatted < 8 * SHOWN_BYTES, "{formatted} bytes formatted");
        let cap = more_bytes(params.len() - SHOWN_BYTES);
        assert_eq!(text.last().unwrap().trim(), cap);
        let one_mb_cut = more_bytes((1 << 20) - SHOWN_BYTES);
        assert_eq!(
            text.iter().filter(|l| l.contains(&one_mb_cut)).count(),
            2,
            "error and event detail"
        );

        // Scrolled to the end, the screen shows the line saying what was cut.
        h.app.detail.as_mut().unwrap().scroll = u16::MAX;
        let frame = crate::ui::tests::frame(&h);
        assert!(
            frame.contains("more bytes, `settle show --format json`"),
            "{frame}"
        );
    }

    /// What a lookup printed is untrusted: the Probes section shows it
    /// made visible, newest last, and no raw control reaches the frame.
    #[test]
    fn probes_show_under_the_evidence_newest_last_with_their_output_made_visible() {
        use crate::domain::{NewProbe, ProbeOutcome};
        let mut h = Harness::new();
        h.receive(crate::app::Msg::Resize(120, 40));
        let op = h.app.decision_targets()[0];
        for (outcome, result_id, output) in [
            (ProbeOutcome::NotFound, None, "no such key"),
            (
                ProbeOutcome::Found,
                Some("report-77"),
                "report-77\n\u{1b}[2J\u{1b}]0;pwned\u{7}",
            ),
        ] {
            h.ledger
                .record_probe(&NewProbe {
                    op_id: op,
                    idem_key: "k".into(),
                    command: "/bin/lookup".into(),
                    outcome,
                    result_id: result_id.map(str::to_string),
                    exit: "exit 0".into(),
                    output: Some(output.into()),
                    operator: "alice".into(),
                    probed_at: "2026-11-06T11:59:00Z".into(),
                    duration_ms: 12,
                })
                .unwrap();
        }
        h.keys("enter");
        let frame = crate::ui::tests::frame(&h);
        let older = frame.find("not found · exit 0").expect(&frame);
        let newer = frame.find("found report-77 · exit 0").expect(&frame);
        assert!(older < newer, "newest last: {frame}");
        assert!(frame.contains("␛[2J"), "{frame}");
        assert!(!frame.contains('\u{1b}') && !frame.contains('\u{7}'));
    }
}
