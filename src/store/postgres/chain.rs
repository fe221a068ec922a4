//! Verifying the audit trail's hash chain in a PostgreSQL ledger: the
//! decisions read in id order, each cell said as SQLite stores it (a
//! `timestamptz` as settle's time text, a boolean as 0 or 1) so the links
//! are the ones [`crate::store::chain`] computes on either backend. Reads
//! only.

use std::path::Path;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Row};

use super::conn::Pg;
use crate::domain::format_time;
use crate::error::Result;
use crate::store::chain::{CHAIN_COLUMNS, ChainVerdict, OwnedCell, Walked, walk};

/// [`crate::store::backend::History::verify_chain`] on PostgreSQL: a
/// database without settle's tables has no decision to chain.
pub(super) fn verify(pg: &Pg) -> Result<ChainVerdict> {
    pg.fresh()?;
    verify_on(&mut pg.client.borrow_mut(), &pg.shown)
}

/// [`verify`] on `client`, whose `decisions` is the trail (a job queue's
/// session finds settle's own there); `shown` names the ledger in errors.
pub(crate) fn verify_on(client: &mut Client, shown: &Path) -> Result<ChainVerdict> {
    let err = |e| super::error::pg_error(shown, "reading the audit trail", e);
    let adopted: bool = client
        .query_one("SELECT to_regclass('decisions') IS NOT NULL", &[])
        .and_then(|r| r.try_get(0))
        .map_err(err)?;
    if !adopted {
        return Ok(ChainVerdict::Intact {
            decisions: 0,
            head: None,
        });
    }
    // Streamed: a trail of millions of decisions is never all in memory.
    let sql = format!("SELECT {CHAIN_COLUMNS}, chain_hash FROM decisions ORDER BY id");
    let mut rows = client
        .query_raw(&sql, std::iter::empty::<i64>())
        .map_err(err)?;
    walk(|| match rows.next() {
        Ok(Some(row)) => walked(&row).map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    })
    .map_err(err)
}

/// One decision as the walk reads it.
fn walked(r: &Row) -> std::result::Result<Walked, postgres::Error> {
    let int = |i| r.try_get::<_, i64>(i).map(OwnedCell::Int);
    let opt_int = |i| {
        r.try_get::<_, Option<i64>>(i)
            .map(|v| v.map_or(OwnedCell::Null, OwnedCell::Int))
    };
    let text = |i| {
        r.try_get::<_, String>(i)
            .map(|s| OwnedCell::Text(s.into_bytes()))
    };
    let opt_text = |i| {
        r.try_get::<_, Option<String>>(i)
            .map(|v| v.map_or(OwnedCell::Null, |s| OwnedCell::Text(s.into_bytes())))
    };
    let decided_at = r.try_get::<_, chrono::DateTime<chrono::Utc>>(9)?;
    let cells = vec![
        int(0)?,
        int(1)?,
        text(2)?,
        text(3)?,
        text(4)?,
        opt_text(5)?,
        opt_text(6)?,
        opt_text(7)?,
        text(8)?,
        OwnedCell::Text(format_time(decided_at).into_bytes()),
        int(10)?,
        opt_int(11)?,
        OwnedCell::Int(i64::from(r.try_get::<_, bool>(12)?)),
    ];
    Ok(Walked {
        id: r.try_get(0)?,
        cells,
        stored: r.try_get(13)?,
    })
}
