//! `settle adopt`: adopts (or migrates) a ledger explicitly, with its
//! progress on stderr (a bar on a terminal, else a line per step), since building the indexes of a big
//! ledger takes a while. The only write is the adoption itself; reading
//! commands never adopt, so looking at a ledger never changes it.

use std::path::Path;

use super::output::emit;
use super::progress::Steps;
use crate::error::Result;
use crate::store::{Access, Ledger};

pub fn run(path: &Path) -> Result<()> {
    let mut steps: Option<Steps> = None;
    let (ledger, report) = Ledger::open_with_progress(path, Access::ReadWrite, &mut |p| {
        let steps = steps.get_or_insert_with(|| Steps::new("adopting", p.total as u64));
        steps.at(p.done as u64, &p.step.to_string(), || {
            format!("settle: adopting: {} ({}/{})", p.step, p.done, p.total)
        });
    })?;
    if let Some(steps) = &steps {
        steps.finish();
    }
    if ledger.is_read_only() {
        return Err(ledger.why_not_writable());
    }
    let line = report.upgraded.unwrap_or_else(|| {
        format!(
            "settle: {} is already adopted (schema {}); nothing to do",
            ledger.path().display(),
            ledger.schema_version()
        )
    });
    emit(|out| writeln!(out, "{line}"))
}
