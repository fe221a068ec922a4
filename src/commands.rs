//! The scriptable commands: each opens the ledger through `store`, does one
//! thing, and prints it in the format asked for. Text output is sanitised and
//! carries no colour or escape codes unless stdout is a terminal and
//! `NO_COLOR` is unset. Nothing here speaks SQL.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::cli::{
    AuditArgs, Cli, Command, DecideArgs, DrillCommand, ListArgs, ListFormat, ShowArgs, ShowFormat,
};
use crate::domain::rules::{self, Verdict};
use crate::domain::{
    Decision, DecisionDraft, DecisionId, DecisionKind, OperationDetail, OperationRow, State, age,
};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::store::{Access, Ledger, Seek};
use crate::text::pad;
use crate::text::sanitize;

/// Runs the parsed command line. Returns the process exit status.
pub fn run(cli: Cli) -> Result<()> {
    let now = Utc::now();
    match cli.command {
        Some(Command::Init { ledger }) => init(&ledger),
        Some(Command::List(args)) => list(&args, now),
        Some(Command::Show(args)) => show(&args, now),
        Some(Command::Decide(args)) => decide(&args, now),
        Some(Command::Audit(args)) => audit(&args),
        Some(Command::Drill { command }) => drill(command),
        Some(Command::Demo { dir, no_console }) => crate::demo::run(dir, no_console, now),
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "settle", &mut io::stdout());
            Ok(())
        }
        None => {
            let console = cli.console;
            let Some(ledger) = console.ledger else {
                return Err(Error::Usage(
                    "name a ledger to open (settle LEDGER), or try `settle demo`".to_string(),
                ));
            };
            let operator = console
                .operator
                .resolve()
                .unwrap_or_else(|| "unknown".to_string());
            crate::tui::run(crate::tui::Options {
                ledger,
                drills: console.drills,
                operator,
                read_only: console.read_only,
                keymap: console.keymap,
            })
        }
    }
}

/// Opens a ledger for a command, saying on stderr what adoption did.
pub fn open(path: &Path, read_only: bool) -> Result<Ledger> {
    let access = if read_only {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let (ledger, report) = Ledger::open(path, access)?;
    for line in [report.upgraded, report.not_adopted].into_iter().flatten() {
        eprintln!("{line}");
    }
    if let Some(why) = report.read_only_reason {
        eprintln!("settle: {}: opened read-only: {why}", path.display());
    }
    Ok(ledger)
}

fn init(path: &Path) -> Result<()> {
    Ledger::create(path)?;
    println!("created {}", path.display());
    Ok(())
}

/// Whether text output may use colour.
fn colour() -> bool {
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Writes to stdout. A closed pipe (`settle list | head`) is not an error:
/// it returns `false`, and the caller stops producing.
fn emit_page(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<bool> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|_| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(source) => Err(Error::Io {
            path: PathBuf::from("<stdout>"),
            doing: "writing output".to_string(),
            source,
        }),
    }
}

/// Writes one whole output to stdout; see [`emit_page`].
fn emit(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    emit_page(write).map(|_| ())
}

fn list(args: &ListArgs, now: DateTime<Utc>) -> Result<()> {
    let mut query = match args.filter.as_deref() {
        Some(f) => Query::parse(f)?,
        None => Query::default(),
    };
    query.queue |= args.queue;
    if !args.state.is_empty() {
        query = query.and(Query::parse(&format!("state:{}", args.state.join(",")))?);
    }
    let ledger = open(&args.ledger, args.read_only)?;
    let want = if args.all { usize::MAX } else { args.limit };
    write_list(&ledger, &query, args.format, want, now)
}

/// Prints up to `want` operations matching `query`, a page at a time, so
/// `--all` over millions of rows holds one page in memory.
pub(crate) fn write_list(
    ledger: &Ledger,
    query: &Query,
    format: ListFormat,
    want: usize,
    now: DateTime<Utc>,
) -> Result<()> {
    const PAGE: usize = 1000;
    let colour = colour();
    let mut widths: Option<TableWidths> = None;
    let mut seek = Seek::First;
    let mut shown = 0usize;
    let mut more = false;
    while shown < want {
        let take = PAGE.min(want - shown);
        let mut page = ledger.page(query, seek, take + 1, now)?;
        more = page.len() > take;
        page.truncate(take);
        let widths = widths.get_or_insert_with(|| TableWidths::of(&page, now));
        let first = shown == 0;
        let open = emit_page(|out| {
            for (i, row) in page.iter().enumerate() {
                let header = first && i == 0;
                match format {
                    ListFormat::Table if header => widths.header(out)?,
                    ListFormat::Csv if header => writeln!(out, "{CSV_HEADER}")?,
                    ListFormat::Json => write!(out, "{}", if header { "[\n  " } else { ",\n  " })?,
                    _ => {}
                }
                match format {
                    ListFormat::Table => widths.row(out, row, now, colour)?,
                    ListFormat::Json => write!(out, "{}", row_json(row, now))?,
                    ListFormat::Jsonl => writeln!(out, "{}", row_json(row, now))?,
                    ListFormat::Csv => writeln!(out, "{}", row_csv(row, now))?,
                }
            }
            Ok(())
        })?;
        shown += page.len();
        match page.last() {
            Some(last) if more && open => seek = Seek::After(last.id),
            _ => break,
        }
    }
    let empty = shown == 0;
    match format {
        ListFormat::Json => {
            emit(|out| writeln!(out, "{}", if empty { "[]" } else { "\n]" }))?;
        }
        ListFormat::Table if empty => eprintln!("settle: no operations match"),
        ListFormat::Table if more && shown >= want => {
            eprintln!("settle: showing the newest {shown}; more match (--limit N or --all)")
        }
        _ => {}
    }
    Ok(())
}

/// `reserved (stale)` for a reservation whose lease passed; the state word
/// otherwise.
fn state_label(row: &OperationRow, now: DateTime<Utc>) -> String {
    if row.is_stale_reservation(now) {
        "reserved (stale)".to_string()
    } else {
        row.state.to_string()
    }
}

fn row_json(row: &OperationRow, now: DateTime<Utc>) -> Value {
    json!({
        "id": row.id.0,
        "state": row.state.as_str(),
        "stale_reservation": row.is_stale_reservation(now),
        "account": row.account,
        "op_type": row.op_type,
        "idem_key": row.idem_key,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "last_event": row.last_event,
        "last_error": row.last_error,
        "result_id": row.result_id,
        "lease_expires_at": row.lease_expires_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "version": row.version,
    })
}

const CSV_HEADER: &str = "id,state,stale_reservation,account,op_type,idem_key,attempts,max_attempts,last_event,last_error,result_id,created_at,updated_at,version";

fn row_csv(row: &OperationRow, now: DateTime<Utc>) -> String {
    let fields = [
        row.id.to_string(),
        row.state.to_string(),
        row.is_stale_reservation(now).to_string(),
        row.account.clone(),
        row.op_type.clone(),
        row.idem_key.clone(),
        row.attempts.to_string(),
        row.max_attempts.to_string(),
        row.last_event.clone().unwrap_or_default(),
        row.last_error.clone().unwrap_or_default(),
        row.result_id.clone().unwrap_or_default(),
        row.created_at.clone(),
        row.updated_at.clone(),
        row.version.to_string(),
    ];
    csv_line(&fields)
}

/// One CSV record of `fields`, each quoted as [`csv_field`] says.
fn csv_line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",")
}

/// RFC 4180 quoting, with control characters made visible: CSV lands on
/// terminals too.
fn csv_field(value: &str) -> String {
    let clean = sanitize(value);
    if clean.contains([',', '"']) || clean.starts_with(' ') || clean.ends_with(' ') {
        format!("\"{}\"", clean.replace('"', "\"\""))
    } else {
        clean.into_owned()
    }
}

/// Column widths for the table format, measured on the first page and
/// capped so one long value cannot push the rest off the screen. The key is
/// last and never cut: it is what operators copy.
struct TableWidths {
    state: usize,
    account: usize,
    op_type: usize,
    last_event: usize,
}

impl TableWidths {
    fn of(rows: &[OperationRow], now: DateTime<Utc>) -> Self {
        let w = |f: &dyn Fn(&OperationRow) -> usize, min: usize, max: usize| {
            rows.iter().map(f).max().unwrap_or(0).clamp(min, max)
        };
        TableWidths {
            state: w(&|r| state_label(r, now).len(), 5, 16),
            account: w(&|r| display_width(&r.account), 7, 24),
            op_type: w(&|r| display_width(&r.op_type), 4, 22),
            last_event: w(
                &|r| display_width(r.last_event.as_deref().unwrap_or("-")),
                10,
                18,
            ),
        }
    }

    fn header(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{:>8}  {:<sw$}  {:>5}  {:>8}  {:<aw$}  {:<tw$}  {:<ew$}  KEY",
            "ID",
            "STATE",
            "AGE",
            "ATTEMPTS",
            "ACCOUNT",
            "TYPE",
            "LAST EVENT",
            sw = self.state,
            aw = self.account,
            tw = self.op_type,
            ew = self.last_event,
        )
    }

    fn row(
        &self,
        out: &mut dyn Write,
        row: &OperationRow,
        now: DateTime<Utc>,
        colour: bool,
    ) -> io::Result<()> {
        let state = pad(&state_label(row, now), self.state);
        let state = if colour {
            format!(
                "\x1b[{}m{state}\x1b[0m",
                state_colour(&row.state, row.is_stale_reservation(now))
            )
        } else {
            state
        };
        writeln!(
            out,
            "{:>8}  {state}  {:>5}  {:>8}  {}  {}  {}  {}",
            row.id.0,
            age(&row.updated_at, now),
            format!("{}/{}", row.attempts, row.max_attempts),
            pad(&sanitize(&row.account), self.account),
            pad(&sanitize(&row.op_type), self.op_type),
            pad(
                &sanitize(row.last_event.as_deref().unwrap_or("-")),
                self.last_event
            ),
            sanitize(&row.idem_key),
        )
    }
}

fn state_colour(state: &State, stale: bool) -> &'static str {
    match state {
        State::Unknown => "33",
        State::Exhausted => "31",
        State::Conflict => "35",
        State::Reserved if stale => "33",
        State::Completed => "32",
        State::RetryPending => "36",
        _ => "0",
    }
}

fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(sanitize(s).as_ref())
}

fn show(args: &ShowArgs, now: DateTime<Utc>) -> Result<()> {
    let ledger = open(&args.ledger, args.read_only)?;
    let id = ledger.resolve(&args.op)?;
    let detail = ledger.detail(id)?;
    match args.format {
        ShowFormat::Json => emit(|out| {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&detail_json(&detail, now)).unwrap_or_default()
            )
        }),
        ShowFormat::Text => emit(|out| out.write_all(detail_text(&detail, now).as_bytes())),
    }
}

/// What each decision kind would meet now, judged by the contract's rules
/// with the operator's text assumed given (the text is theirs to supply).
fn decision_outlook(detail: &OperationDetail, now: DateTime<Utc>) -> Vec<(DecisionKind, Verdict)> {
    [
        DecisionKind::Applied,
        DecisionKind::NotApplied,
        DecisionKind::RetrySameKey,
        DecisionKind::CancelRetry,
    ]
    .into_iter()
    .map(|kind| {
        let checks = rules::check_kind(kind, detail, now);
        let verdict = match rules::refusal(&checks) {
            Some(c) => Verdict::Fail(format!("{}: {}", c.rule.label(), c.verdict.text())),
            None => Verdict::Pass(
                checks
                    .iter()
                    .filter_map(|c| match &c.verdict {
                        Verdict::Note(t) => Some(t.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        };
        (kind, verdict)
    })
    .collect()
}

fn detail_text(detail: &OperationDetail, now: DateTime<Utc>) -> String {
    use std::fmt::Write as _;
    let op = &detail.operation;
    let s = |t: &str| sanitize(t).into_owned();
    let opt = |t: &Option<String>| t.as_deref().map(s).unwrap_or_else(|| "-".to_string());
    let mut o = String::new();
    let stale = if op.is_stale_reservation(now) {
        " (stale: lease passed)"
    } else {
        ""
    };
    let _ = writeln!(o, "operation {}  {}", op.id, s(&op.natural_key()));
    let _ = writeln!(
        o,
        "  state        {}{stale}  (version {})",
        s(op.state.as_str()),
        op.version
    );
    let _ = writeln!(o, "  account      {}", s(&op.account));
    let contract = detail.contract_summary();
    let _ = writeln!(o, "  op type      {}  ({contract})", s(&op.op_type));
    let _ = writeln!(o, "  key          {}", s(&op.idem_key));
    let _ = writeln!(o, "  fingerprint  {}", s(&op.fingerprint));
    let _ = writeln!(o, "  result id    {}", opt(&op.result_id));
    let _ = writeln!(
        o,
        "  attempts     {}/{}",
        detail.attempts_used(),
        op.max_attempts
    );
    let _ = writeln!(o, "  deadline     {}", opt(&op.deadline_at));
    let _ = writeln!(o, "  lease until  {}", opt(&op.lease_expires_at));
    let _ = writeln!(o, "  key expires  {}", opt(&op.key_expires_at));
    let _ = writeln!(
        o,
        "  created      {}   updated {} ({} ago)",
        s(&op.created_at),
        s(&op.updated_at),
        age(&op.updated_at, now)
    );
    if let Some(params) = &op.params {
        let pretty = serde_json::from_str::<Value>(params)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| params.clone());
        let _ = writeln!(o, "\nparams");
        for line in pretty.lines() {
            let _ = writeln!(o, "  {}", s(line));
        }
    }
    let _ = writeln!(o, "\nattempts");
    if detail.attempts.is_empty() {
        let _ = writeln!(o, "  (none recorded)");
    }
    for a in &detail.attempts {
        let _ = writeln!(
            o,
            "  #{:<3} {:<9} {} -> {}{}{}",
            a.attempt,
            s(a.outcome.as_str()),
            s(&a.started_at),
            opt(&a.ended_at),
            a.error
                .as_deref()
                .map(|e| format!("  error: {}", s(e)))
                .unwrap_or_default(),
            a.response
                .as_deref()
                .map(|r| format!("  response: {}", s(r)))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(o, "\nevents");
    if detail.events.is_empty() {
        let _ = writeln!(o, "  (none recorded)");
    }
    for e in &detail.events {
        let _ = writeln!(
            o,
            "  {}  {:<8} {}{}",
            s(&e.at),
            e.attempt
                .map(|a| format!("#{a}"))
                .unwrap_or_else(|| "-".to_string()),
            s(&e.event),
            e.detail
                .as_deref()
                .map(|d| format!("  {}", s(d)))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(o, "\ndecisions");
    if detail.decisions.is_empty() {
        let _ = writeln!(o, "  (none)");
    }
    for d in &detail.decisions {
        let _ = writeln!(o, "  {}", decision_line(d));
    }
    if !detail.retry_requests.is_empty() {
        let _ = writeln!(o, "\nretry requests");
        for r in &detail.retry_requests {
            let _ = writeln!(
                o,
                "  #{} {} by {} at {} (decision {})",
                r.id,
                s(&r.status),
                s(&r.requested_by),
                s(&r.requested_at),
                r.decision_id
            );
        }
    }
    let summary = crate::domain::evidence::summarize(detail, now);
    let _ = writeln!(o, "\nevidence");
    for fact in &summary.facts {
        let _ = writeln!(o, "  - {}", s(fact));
    }
    let _ = writeln!(o, "  => {}", s(&summary.suggestion));
    let _ = writeln!(o, "\nwhat may be decided now");
    for (kind, verdict) in decision_outlook(detail, now) {
        let text = match &verdict {
            Verdict::Fail(t) => format!("refused: {t}"),
            Verdict::Pass(t) if t.is_empty() => "allowed".to_string(),
            Verdict::Pass(t) | Verdict::Note(t) => format!("allowed ({t})"),
        };
        let _ = writeln!(o, "  {:<15} {}", kind.as_str(), s(&text));
    }
    o
}

fn decision_line(d: &Decision) -> String {
    let s = |t: &str| sanitize(t).into_owned();
    let mut line = format!(
        "#{} {} {} {} -> {} by {}",
        d.id,
        s(&d.decided_at),
        s(&d.decision),
        s(&d.from_state),
        s(&d.to_state),
        s(&d.operator)
    );
    for (label, value) in [
        ("result", &d.result_id),
        ("evidence", &d.evidence),
        ("note", &d.note),
    ] {
        if let Some(v) = value {
            line.push_str(&format!("  {label}: {}", s(v)));
        }
    }
    if let Some(u) = d.undoes {
        line.push_str(&format!("  undoes #{u}"));
    }
    line
}

fn decision_json(d: &Decision) -> Value {
    json!({
        "id": d.id.0,
        "op_id": d.op_id.0,
        "decision": d.decision,
        "from_state": d.from_state,
        "to_state": d.to_state,
        "result_id": d.result_id,
        "evidence": d.evidence,
        "note": d.note,
        "operator": d.operator,
        "decided_at": d.decided_at,
        "op_version": d.op_version,
        "undoes": d.undoes.map(|u| u.0),
    })
}

fn detail_json(detail: &OperationDetail, now: DateTime<Utc>) -> Value {
    let op = &detail.operation;
    let summary = crate::domain::evidence::summarize(detail, now);
    let parse = |t: &Option<String>| {
        t.as_deref().map(|t| {
            serde_json::from_str::<Value>(t).unwrap_or_else(|_| Value::String(t.to_string()))
        })
    };
    json!({
        "operation": {
            "id": op.id.0,
            "account": op.account,
            "op_type": op.op_type,
            "idem_key": op.idem_key,
            "fingerprint": op.fingerprint,
            "params": parse(&op.params),
            "state": op.state.as_str(),
            "stale_reservation": op.is_stale_reservation(now),
            "in_queue": op.in_queue(now),
            "result_id": op.result_id,
            "max_attempts": op.max_attempts,
            "deadline_at": op.deadline_at,
            "lease_expires_at": op.lease_expires_at,
            "key_expires_at": op.key_expires_at,
            "created_at": op.created_at,
            "updated_at": op.updated_at,
            "version": op.version,
        },
        "contract": detail.contract.as_ref().map(|c| json!({
            "op_type": c.op_type,
            "idempotent": c.idempotent,
            "key_retention_s": c.key_retention_s,
            "description": c.description,
        })),
        "attempts": detail.attempts.iter().map(|a| json!({
            "attempt": a.attempt,
            "started_at": a.started_at,
            "ended_at": a.ended_at,
            "outcome": a.outcome.as_str(),
            "error": a.error,
            "response": parse(&a.response),
        })).collect::<Vec<_>>(),
        "events": detail.events.iter().map(|e| json!({
            "id": e.id,
            "attempt": e.attempt,
            "at": e.at,
            "event": e.event,
            "detail": parse(&e.detail),
        })).collect::<Vec<_>>(),
        "decisions": detail.decisions.iter().map(decision_json).collect::<Vec<_>>(),
        "retry_requests": detail.retry_requests.iter().map(|r| json!({
            "id": r.id,
            "requested_at": r.requested_at,
            "requested_by": r.requested_by,
            "status": r.status,
            "decision_id": r.decision_id.0,
        })).collect::<Vec<_>>(),
        "evidence": { "facts": summary.facts, "suggestion": summary.suggestion },
        "may_decide": decision_outlook(detail, now).into_iter().map(|(kind, v)| json!({
            "decision": kind.as_str(),
            "allowed": !v.is_fail(),
            "why": v.text(),
        })).collect::<Vec<_>>(),
    })
}

fn decide(args: &DecideArgs, now: DateTime<Utc>) -> Result<()> {
    let operator = args.operator.resolve().ok_or_else(|| {
        Error::Usage(
            "who is deciding? pass --operator NAME or set SETTLE_OPERATOR (no login name found)"
                .to_string(),
        )
    })?;
    let kind = if args.applied {
        DecisionKind::Applied
    } else if args.not_applied {
        DecisionKind::NotApplied
    } else if args.retry_same_key {
        DecisionKind::RetrySameKey
    } else if args.cancel_retry {
        DecisionKind::CancelRetry
    } else {
        DecisionKind::Reopen
    };
    let mut ledger = open(&args.ledger, false)?;
    let id = ledger.resolve(&args.op)?;
    let expected_version = match args.expect_version {
        Some(v) => v,
        None => ledger.detail(id)?.operation.version,
    };
    let draft = DecisionDraft {
        op_id: id,
        kind,
        result_id: args.result_id.clone(),
        evidence: args.evidence.clone(),
        note: args.note.clone(),
        override_committed: args.override_committed,
        operator,
        expected_version,
        undoes: args.reopen.map(DecisionId),
    };
    let receipt = ledger.record_decision(&draft, now)?;
    let mut line = format!(
        "recorded decision {}: operation {} {} -> {} (version {})",
        receipt.decision_id,
        receipt.op_id,
        receipt.from_state,
        receipt.to_state,
        receipt.new_version
    );
    if let Some(r) = receipt.retry_request_id {
        line.push_str(&format!(
            "; retry request {r} {}",
            if kind == DecisionKind::CancelRetry {
                "cancelled"
            } else {
                "queued"
            }
        ));
    }
    if receipt.extra_attempt {
        line.push_str("; spends one attempt beyond the budget");
    }
    emit(|out| writeln!(out, "{line}"))
}

fn audit(args: &AuditArgs) -> Result<()> {
    let ledger = open(&args.ledger, args.read_only)?;
    let decisions = ledger.audit_page(Seek::First, args.limit)?;
    emit(|out| match args.format {
        ListFormat::Table => {
            if decisions.is_empty() {
                eprintln!("settle: no decisions recorded");
            }
            for d in &decisions {
                writeln!(out, "op {:>8}  {}", d.op_id.0, decision_line(d))?;
            }
            Ok(())
        }
        ListFormat::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&decisions.iter().map(decision_json).collect::<Vec<_>>())
                .unwrap_or_default()
        ),
        ListFormat::Jsonl => {
            for d in &decisions {
                writeln!(out, "{}", decision_json(d))?;
            }
            Ok(())
        }
        ListFormat::Csv => {
            writeln!(
                out,
                "id,op_id,decision,from_state,to_state,result_id,evidence,note,operator,decided_at,op_version,undoes"
            )?;
            for d in &decisions {
                let fields = [
                    d.id.to_string(),
                    d.op_id.to_string(),
                    d.decision.clone(),
                    d.from_state.clone(),
                    d.to_state.clone(),
                    d.result_id.clone().unwrap_or_default(),
                    d.evidence.clone().unwrap_or_default(),
                    d.note.clone().unwrap_or_default(),
                    d.operator.clone(),
                    d.decided_at.clone(),
                    d.op_version.to_string(),
                    d.undoes.map(|u| u.to_string()).unwrap_or_default(),
                ];
                writeln!(out, "{}", csv_line(&fields))?;
            }
            Ok(())
        }
    })
}

fn drill(command: DrillCommand) -> Result<()> {
    match command {
        DrillCommand::Show { files, format } => {
            let read = files
                .iter()
                .map(|path| crate::drill::load(path))
                .collect::<Result<Vec<_>>>()?;
            match format {
                ShowFormat::Text => {
                    emit(|out| out.write_all(crate::drill::render_text(&read).as_bytes()))
                }
                ShowFormat::Json => emit(|out| {
                    writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&crate::drill::render_json(&read))
                            .unwrap_or_default()
                    )
                }),
            }
        }
        DrillCommand::Import { file, ledger } => {
            let drill = crate::drill::read_file(&file)?;
            for w in &drill.warnings {
                eprintln!("settle: {}: {}", file.display(), sanitize(w));
            }
            let source = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "drill".to_string());
            let plan = crate::drill::import_plan(&drill, &source);
            let mut ledger = open(&ledger, false)?;
            let report = ledger.import(&plan, &[])?;
            let mut states: Vec<(String, usize)> = Vec::new();
            for op in &plan {
                match states.iter_mut().find(|(s, _)| s == op.state.as_str()) {
                    Some((_, n)) => *n += 1,
                    None => states.push((op.state.to_string(), 1)),
                }
            }
            let states: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
            emit(|out| {
                writeln!(
                    out,
                    "{}: {} case(s) ({}): {} imported, {} already in the ledger (left as they are)",
                    file.display(),
                    plan.len(),
                    states.join(", "),
                    report.inserted,
                    report.already_present
                )
            })
        }
    }
}
