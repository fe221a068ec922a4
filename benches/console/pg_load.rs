//! Loads a pristine foreign ledger into PostgreSQL as a service would have
//! written it: ledger-v1's tables with native types (the DDL settle
//! documents, `schema::SERVICE_TABLES`), rows streamed with `COPY`, and
//! nothing of settle's, so settle must adopt the database on its first
//! writable open, as it adopts the SQLite file.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use rusqlite::{Connection, OpenFlags, types::ValueRef};

/// Tables and their columns, in the order `COPY` receives them.
const TABLES: [(&str, &str); 3] = [
    (
        "operations",
        "id, account, op_type, idem_key, fingerprint, params, state, result_id, max_attempts, \
         deadline_at, lease_expires_at, key_expires_at, created_at, updated_at, version",
    ),
    (
        "attempts",
        "op_id, attempt, started_at, ended_at, outcome, error, response",
    ),
    ("events", "id, op_id, attempt, at, event, detail"),
];

/// One cell in COPY's text format: `\N` for NULL, backslash escapes for the
/// characters the format reserves.
fn cell(out: &mut Vec<u8>, v: ValueRef<'_>) {
    match v {
        ValueRef::Null => out.extend_from_slice(b"\\N"),
        ValueRef::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        ValueRef::Real(f) => out.extend_from_slice(f.to_string().as_bytes()),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            for &b in t {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    _ => out.push(b),
                }
            }
        }
    }
}

/// Copies every row of `pristine` into the empty database at `address`,
/// creating the service tables first. Returns the seconds it took.
pub fn load(pristine: &Path, address: &str) -> Result<f64, String> {
    let start = Instant::now();
    let src = Connection::open_with_flags(pristine, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("{}: {e}", pristine.display()))?;
    let mut dst = postgres::Client::connect(address, postgres::NoTls)
        .map_err(|e| format!("{address}: {e}"))?;
    dst.batch_execute(settle::store::postgres::schema::SERVICE_TABLES)
        .map_err(|e| format!("creating the service tables: {e}"))?;
    for (table, columns) in TABLES {
        let mut writer = dst
            .copy_in(&format!("COPY {table} ({columns}) FROM STDIN"))
            .map_err(|e| format!("COPY {table}: {e}"))?;
        let mut stmt = src
            .prepare(&format!("SELECT {columns} FROM {table}"))
            .map_err(|e| format!("reading {table}: {e}"))?;
        let width = stmt.column_count();
        let mut rows = stmt
            .query([])
            .map_err(|e| format!("reading {table}: {e}"))?;
        let mut buf = Vec::with_capacity(1 << 20);
        while let Some(row) = rows.next().map_err(|e| format!("reading {table}: {e}"))? {
            for i in 0..width {
                if i > 0 {
                    buf.push(b'\t');
                }
                cell(&mut buf, row.get_ref(i).map_err(|e| e.to_string())?);
            }
            buf.push(b'\n');
            if buf.len() > 1 << 20 {
                writer
                    .write_all(&buf)
                    .map_err(|e| format!("COPY {table}: {e}"))?;
                buf.clear();
            }
        }
        writer
            .write_all(&buf)
            .map_err(|e| format!("COPY {table}: {e}"))?;
        writer.finish().map_err(|e| format!("COPY {table}: {e}"))?;
    }
    // A service's identity columns move past what it inserted by id.
    dst.batch_execute(
        "SELECT setval(pg_get_serial_sequence('operations', 'id'), (SELECT max(id) FROM operations));
         SELECT setval(pg_get_serial_sequence('events', 'id'), (SELECT max(id) FROM events));
         ANALYZE;",
    )
    .map_err(|e| format!("finishing the load: {e}"))?;
    let loaded = start.elapsed().as_secs_f64();
    // A service's tables at rest were vacuumed long ago. Freshly loaded,
    // the server's autovacuum went through all of `events` (its insert
    // threshold) during the adoption timed next, and made the service's
    // commits wait as much as adoption did (10M: 202 ms with settle gone).
    dst.batch_execute("VACUUM operations, attempts, events")
        .map_err(|e| format!("vacuuming after the load: {e}"))?;
    // The load's gigabytes of WAL leave a checkpoint under way for
    // minutes, whose writes and syncs a service's commits then met during
    // the adoption timed next: a service's database at rest has none.
    dst.batch_execute("CHECKPOINT")
        .map_err(|e| format!("checkpointing after the load: {e}"))?;
    Ok(loaded)
}
