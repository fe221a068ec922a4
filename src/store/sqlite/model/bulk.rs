//! The keeper's settings while it builds the read model, and the steps
//! that make the build durable before it is marked complete. The model is
//! settle's own copy, made again from the ledger at will, so the build
//! writes without syncing (a sync per checkpoint was much of the build's
//! wall time at 10M), and with a larger cache while it copies. A build
//! that the process stopped (however it ended) goes on where it left off,
//! since the operating system keeps what it wrote;
//! a machine that stopped may have lost pages of it, so a build begun in
//! another boot of the machine starts over ([`torn`]). Before the model
//! is marked complete its files are synced: a complete model is never
//! torn.

use std::fs::File;
use std::path::Path;

use rusqlite::Connection;

use super::flush::{Flusher, not_synced};
use crate::store::sqlite::journal;

/// The read model's page cache while the build copies, in KiB: the
/// chunks' lookups stay in memory.
const BUILD_CACHE_KIB: i64 = 65_536;

/// SQLite's default page cache, in KiB: the catch-up's, and the build's
/// while it sorts its indexes. A `CREATE INDEX` sorts runs the size of
/// the cache; larger runs cost more than the merges they save.
const DEFAULT_CACHE_KIB: i64 = 2_000;

/// WAL pages between checkpoints during the build: a page the chunks
/// write again and again is copied into the file once per checkpoint.
const BUILD_CHECKPOINT_PAGES: i64 = 16_384;

/// How much of each file the build reads through a memory map, in bytes:
/// all of it (SQLite caps it at `SQLITE_MAX_MMAP_SIZE`, which
/// `.cargo/config.toml` raises past SQLite's default 2 GiB). The build reads
/// the whole ledger once and sorts through the model's file, and a map
/// spares each page its copy from the kernel (docs/benchmarks.md). The
/// mapped pages are the page cache's, clean and reclaimable, which reads
/// fill either way; they count in the process's resident size until the
/// build ends ([`harden`] unmaps them).
const BUILD_MMAP_BYTES: i64 = 1 << 40;

/// This boot of the machine, where the system tells it (Linux).
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// What a build records as the boot it began in; empty where the system
/// does not tell, and then the build keeps syncing.
pub(super) fn boot() -> String {
    boot_id().unwrap_or_default()
}

/// Whether a build that began in boot `began` and is not complete may be
/// torn: the machine stopped since, and the build did not sync.
pub(super) fn torn(began: &str) -> bool {
    !began.is_empty() && boot_id().as_deref() != Some(began)
}

/// The keeper's settings for the build: no sync where a stopped machine
/// is told apart ([`torn`]), a larger cache, and a rollback journal
/// ([`journal`]), faster than the WAL for a build. Through a rollback
/// journal, a [`Flusher`] writes the pages
/// out as the build goes, returned for [`harden`]. Where another
/// connection has the file open, it stays in WAL, with fewer
/// checkpoints, and without one.
pub(super) fn relax(k: &Connection) -> rusqlite::Result<Option<Flusher>> {
    k.pragma_update(None, "cache_size", -BUILD_CACHE_KIB)?;
    map(k, BUILD_MMAP_BYTES)?;
    let journaled = journal::leave_wal(k)?;
    k.pragma_update(None, "wal_autocheckpoint", BUILD_CHECKPOINT_PAGES)?;
    if boot_id().is_some() {
        k.pragma_update(None, "synchronous", "OFF")?;
    }
    // Without it the build is only harder on a service's disk.
    Ok(file(k)
        .filter(|_| journaled)
        .and_then(|path| Flusher::start(path).ok()))
}

/// The keeper's file, None in memory.
fn file(k: &Connection) -> Option<&Path> {
    k.path().filter(|p| !p.is_empty()).map(Path::new)
}

/// Reads the model's file (`main`) and the ledger (`l`) through a memory
/// map of up to `bytes` each; 0 reads them through `pread` again.
fn map(k: &Connection, bytes: i64) -> rusqlite::Result<()> {
    for schema in ["main", "l"] {
        k.pragma_update(Some(schema), "mmap_size", bytes)?;
    }
    Ok(())
}

/// The keeper's settings for the build's index sorts ([`DEFAULT_CACHE_KIB`]).
pub(super) fn sorting(k: &Connection) -> rusqlite::Result<()> {
    k.pragma_update(None, "cache_size", -DEFAULT_CACHE_KIB)
}

/// Everything the build wrote synced to disk, then the keeper's settings
/// back to the catch-up's (WAL, so the console's readers never wait for
/// it). The build's `flusher` syncs and closes its descriptor while the
/// file is still in a rollback journal ([`super::flush`]); without one,
/// the model's file and its WAL are synced here. Called before the build
/// marks the model complete.
pub(super) fn harden(k: &Connection, flusher: Option<Flusher>) -> rusqlite::Result<()> {
    match flusher {
        Some(flusher) => flusher.finish()?,
        None => sync_files(k)?,
    }
    if !journal::back_to_wal(k)? {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("the read model could not go back to WAL journaling".into()),
        ));
    }
    k.pragma_update(None, "synchronous", "NORMAL")?;
    k.pragma_update(None, "cache_size", -DEFAULT_CACHE_KIB)?;
    k.pragma_update(None, "wal_autocheckpoint", 1000)?;
    map(k, 0)
}

/// Syncs the keeper's file and its WAL, where they are on disk.
fn sync_files(k: &Connection) -> rusqlite::Result<()> {
    let Some(path) = file(k) else {
        return Ok(());
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    for file in [path, Path::new(&wal)] {
        let synced = match File::open(file) {
            Ok(f) => f.sync_all(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        synced.map_err(|e| not_synced(file, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::{BUILD_MMAP_BYTES, map};

    fn mapped(k: &Connection, schema: &str) -> i64 {
        k.query_row(&format!("PRAGMA {schema}.mmap_size"), [], |r| r.get(0))
            .unwrap()
    }

    /// The bundled SQLite maps as much as the build asks, past its default
    /// 2 GiB cap (`.cargo/config.toml`), and unmaps both files after.
    #[test]
    fn the_build_maps_both_files_whole_and_unmaps_them() {
        let dir = tempfile::tempdir().unwrap();
        let k = Connection::open(dir.path().join("model")).unwrap();
        k.execute(
            "ATTACH ?1 AS l",
            [dir.path().join("ledger").to_str().unwrap()],
        )
        .unwrap();
        map(&k, BUILD_MMAP_BYTES).unwrap();
        for schema in ["main", "l"] {
            assert_eq!(mapped(&k, schema), BUILD_MMAP_BYTES, "{schema}");
        }
        map(&k, 0).unwrap();
        for schema in ["main", "l"] {
            assert_eq!(mapped(&k, schema), 0, "{schema}");
        }
    }
}
