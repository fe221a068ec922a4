//! The schema's part of opening a PostgreSQL ledger: the schema checked
//! ([`super::tables::inspect`]) and, on a writable open, a service's tables
//! adopted ([`super::adopt`]); a read-only open says what adopting would do.

use super::tables::{Inspection, SCHEMA_VERSION, configure, inspect};
use crate::error::Result;
use crate::store::open::{OpenReport, Progress};
use crate::store::postgres::conn::Pg;

/// Checks the schema on open and, when writable, adopts a service's tables
/// (or repairs settle's missing objects, or drops retired ones) without
/// holding up the service ([`super::adopt`]). A read-only open only reads:
/// its session cannot write.
pub(crate) fn open(pg: &mut Pg, progress: &mut dyn FnMut(Progress)) -> Result<OpenReport> {
    let shown = pg.shown.clone();
    let (read_only, wait) = (pg.read_only, pg.wait);
    let client = pg.client.get_mut();
    configure(client, &shown, read_only, wait)?;
    let found = inspect(client, &shown)?;
    let mut report = OpenReport::default();
    if !found.needs_upgrade() {
        return Ok(report);
    }
    if read_only {
        report.not_adopted = Some(not_adopted(&found));
        pg.tables = found.tables();
        pg.events = found.events();
        pg.queue = found.queue;
        return Ok(report);
    }
    // Adoption writes: on the primary when reads go to a standby.
    let client = pg.writer()?;
    let adopted = super::adopt::adopt(client, &shown, wait, progress);
    // Adoption lifted the session's timeouts for its index builds.
    configure(client, &shown, read_only, wait)?;
    report.upgraded = adopted.map_err(|e| e.busy_after(wait))?;
    Ok(report)
}

/// What a read-only look says of a ledger it leaves as it is: what is
/// missing, and what adopting it would add or drop.
fn not_adopted(found: &Inspection) -> String {
    if found.version == 0 {
        let mut adds: Vec<String> = found
            .missing_console_tables
            .iter()
            .map(|t| format!("table {t}"))
            .collect();
        adds.push("settle's indexes (built without blocking writes)".to_string());
        if !found.events_by_op {
            adds.push("the table that shows each operation's last event".to_string());
        }
        return format!(
            "schema 0 is older than {SCHEMA_VERSION}; shown read-only without adopting it \
             (adopting adds {}; no trigger on the service's tables)",
            adds.join(", ")
        );
    }
    if found.version < SCHEMA_VERSION {
        return format!(
            "schema {} is older than {SCHEMA_VERSION}; shown read-only without upgrading it \
             (upgrading drops settle's change-notification triggers and indexes \
             from the service's tables)",
            found.version
        );
    }
    "some of settle's tables, columns, indexes or triggers are missing; \
     shown read-only without repairing it"
        .to_string()
}
