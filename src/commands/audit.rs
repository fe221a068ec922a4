//! `settle audit`: the decisions, newest first, in the list formats, read a
//! page at a time; like `list`, it says on stderr how many decisions a limit
//! left out. `--verify` walks the trail's hash chain instead. A decision's words come from [`crate::labels`], shared with
//! `show` and the console.

use super::output::{emit, emit_page, left_out, rows_wanted};
use crate::cli::{AuditArgs, ListFormat};
use crate::error::{Error, Result};
use crate::export::{DECISION_CSV_HEADER, decision_csv, decision_json};
use crate::labels;
use crate::store::{ChainVerdict, Ledger, Seek};
use crate::text::sanitize;

pub fn run(args: &AuditArgs) -> Result<()> {
    let ledger = super::ledger_arg::open_for_reading(&args.ledger)?;
    if args.verify {
        return verify(&ledger);
    }
    let want = rows_wanted(args.format, args.limit, args.all, 50);
    let format = args.format;
    let mut seek = Seek::First;
    let mut shown = 0usize;
    let mut more = true;
    while shown < want && more {
        let take = PAGE.min(want - shown);
        let mut page = ledger.audit_page(seek, take + 1)?;
        more = page.len() > take;
        page.truncate(take);
        let first = shown == 0;
        let open = emit_page(|out| {
            for (i, d) in page.iter().enumerate() {
                let header = first && i == 0;
                match format {
                    ListFormat::Csv if header => writeln!(out, "{DECISION_CSV_HEADER}")?,
                    ListFormat::Json => write!(out, "{}", if header { "[\n  " } else { ",\n  " })?,
                    _ => {}
                }
                match format {
                    ListFormat::Table => writeln!(
                        out,
                        "op {:>8}  #{} {} {}",
                        d.op_id.0,
                        d.id,
                        sanitize(&d.decided_at),
                        labels::decision_line(d)
                    )?,
                    ListFormat::Csv => writeln!(out, "{}", decision_csv(d))?,
                    ListFormat::Json => write!(out, "{}", decision_json(d))?,
                    ListFormat::Jsonl => writeln!(out, "{}", decision_json(d))?,
                }
            }
            Ok(())
        })?;
        shown += page.len();
        match page.last() {
            Some(last) if open => seek = Seek::After(last.id),
            _ => more = false,
        }
    }
    if format == ListFormat::Json {
        emit(|out| writeln!(out, "{}", if shown == 0 { "[]" } else { "\n]" }))?;
    }
    let total = if more || want == 0 {
        shown + ledger.audit_count(seek)?
    } else {
        shown
    };
    if total > shown {
        eprintln!("{}", left_out("decisions", shown, total));
    } else if shown == 0 && format == ListFormat::Table {
        eprintln!("settle: no decisions recorded");
    }
    Ok(())
}

/// `--verify`: walks the hash chain; a broken link is an error (exit 1)
/// naming the decision.
fn verify(ledger: &Ledger) -> Result<()> {
    match ledger.verify_chain()? {
        ChainVerdict::Intact { decisions, head } => emit(|out| {
            writeln!(
                out,
                "chain intact: {decisions} decision{}{}",
                if decisions == 1 { "" } else { "s" },
                head.map(|(id, h)| format!(", head {} (decision {id})", sanitize(&h)))
                    .unwrap_or_default()
            )
        }),
        ChainVerdict::Broken { at, problem } => Err(Error::ChainBroken {
            path: ledger.path().to_path_buf(),
            at,
            problem,
        }),
    }
}

/// Decisions read per query: `--all` over a long trail holds one page.
const PAGE: usize = 1000;
