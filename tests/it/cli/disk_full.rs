//! A SQLite ledger on a disk that fills up (a small tmpfs the test mounts):
//! a decision that cannot be written says so and writes nothing, and once
//! space is freed the same decision goes through with no manual step, its
//! audit trail intact; a read model that cannot grow is read around, and
//! catches up once space is freed. Needs root to mount; elsewhere it says why it did
//! not run.
use crate::kit::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test, unmounted when it ends.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here (needs root)");
            return None;
        }
        Some(SmallDisk { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Fills what is left with one file; returns it.
    fn fill(&self) -> PathBuf {
        let filler = self.path("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn decide(ledger: &Path) -> std::process::Output {
    settle(&[
        "decide",
        ledger.to_str().unwrap(),
        "1",
        "--applied",
        "--result-id",
        "ord-77",
        "--operator",
        "ana",
    ])
}

#[test]
fn a_decision_on_a_full_disk_says_so_writes_nothing_and_goes_through_once_space_is_freed() {
    let Some(disk) = SmallDisk::mount("4m") else {
        return;
    };
    let ledger = disk.path("ledger.db");
    let out = settle(&["init", ledger.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    sql(&ledger)
        .execute_batch(
            "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
               max_attempts, created_at, updated_at)
             VALUES ('acme', 'place_order', 'k-1', 'sha256:00', 'unknown', 3,
               '2026-12-01T10:00:00Z', '2026-12-01T10:00:00Z');",
        )
        .unwrap();
    // Another connection keeps the WAL and its index open, so the
    // decision opens and fails as its transaction grows the WAL.
    let holder = sql(&ledger);
    let _: i64 = holder
        .query_row("SELECT count(*) FROM operations", [], |r| r.get(0))
        .unwrap();
    let filler = disk.fill();

    let refused = decide(&ledger);
    assert_ne!(code(&refused), 0, "{}", stdout(&refused));
    let said = stderr(&refused);
    assert!(said.contains("full"), "{said}");
    assert!(
        said.contains("ledger.db"),
        "the message names the file: {said}"
    );

    // Space freed (a reading connection needs some too): nothing of the
    // refused decision is there, and the same decision goes through.
    std::fs::remove_file(filler).unwrap();
    drop(holder);
    assert_eq!(query_i64(&ledger, "SELECT count(*) FROM decisions"), 0);
    assert_eq!(
        query_i64(
            &ledger,
            "SELECT count(*) FROM operations WHERE state = 'unknown'"
        ),
        1
    );
    let out = decide(&ledger);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(query_i64(&ledger, "SELECT count(*) FROM decisions"), 1);
    let verified = settle(&["audit", ledger.to_str().unwrap(), "--verify"]);
    assert_eq!(code(&verified), 0, "{}", stderr(&verified));
}

fn queue_rows(ledger: &Path) -> (i32, usize, String) {
    let out = settle(&[
        "list",
        ledger.to_str().unwrap(),
        "--queue",
        "--all",
        "--format",
        "jsonl",
    ]);
    (code(&out), stdout(&out).lines().count(), stderr(&out))
}

#[test]
fn a_read_model_that_cannot_grow_on_a_full_disk_leaves_the_ledger_readable_and_catches_up_once_space_is_freed()
 {
    let Some(disk) = SmallDisk::mount("8m") else {
        return;
    };
    let ledger = disk.path("ledger.db");
    let out = settle(&["init", ledger.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    write_failed_ops(&ledger, 1, 50);
    assert_eq!(queue_rows(&ledger).1, 50);
    // What the service wrote since: the model has yet to read it, and
    // reading it grows the model.
    write_failed_ops(&ledger, 51, 2000);
    let before = std::fs::read(&ledger).unwrap();
    // Other connections keep both files' WAL open, as a running service
    // and console do, so a read needs no new file.
    let holder = sql(&ledger);
    let model = disk.path("ledger.db-settle");
    let model_holder = sql(&model);
    for conn in [&holder, &model_holder] {
        let _: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
    }
    let filler = disk.fill();

    let (status, rows, said) = queue_rows(&ledger);
    assert_eq!(status, 0, "{said}");
    assert_eq!(
        rows, 2050,
        "every queue row, read from the ledger itself: {said}"
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        before,
        "the ledger changed"
    );
    let caught_up = || query_i64(&model, "SELECT count(*) FROM settle_ops");
    assert_eq!(caught_up(), 50, "the model could not have grown");

    std::fs::remove_file(filler).unwrap();
    drop((holder, model_holder));
    let (status, rows, said) = queue_rows(&ledger);
    assert_eq!((status, rows), (0, 2050), "{said}");
    assert_eq!(
        caught_up(),
        2050,
        "the model caught up once space was freed"
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        before,
        "the ledger changed"
    );
    assert_eq!(query_i64(&ledger, "SELECT count(*) FROM operations"), 2050);
    assert_eq!(query_i64(&ledger, "SELECT count(*) FROM attempts"), 2050);
    assert_eq!(query_i64(&ledger, "SELECT count(*) FROM decisions"), 0);
}
