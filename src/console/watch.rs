//! Watches the ledger for the console: other processes' commits
//! ([`Ledger::data_version`] on a read-only connection of its own) and, for
//! a ledger file, the path still naming the file that was opened (device
//! and inode: a deleted or replaced ledger must not look live nor take
//! decisions into an unlinked inode that nobody will ever read). Cheap when nothing
//! happens: for a file a poll is two `stat`s, and the ledger is asked only
//! when the file or its WAL moved; a server's ledger counts the change
//! notices it heard without asking the server. Answers with [`Msg`]s for
//! the model; never touches the terminal nor knows which database it is.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use crate::app::Msg;
use crate::console::gate::Gate;
use crate::store::group;
use crate::store::{Access, Ledger};

/// A commit whose `stat` looks like the last one (same size within the
/// file system's timestamp granularity) is still seen within this long.
const ASK_ANYWAY_EVERY: Duration = Duration::from_secs(5);

/// The least time between two change notices. A service committing every
/// 10 ms moved data_version on every poll, and each notice rereads the
/// page, the detail and the counts (and on SQLite catches the read model
/// up): nearly half a core. A change that comes sooner is told
/// when the gap has passed, so another process's commit still reaches the
/// screen within a poll, this gap and one reread (under 300 ms).
const NOTICE_GAP: Duration = Duration::from_millis(150);

/// Which file a path names: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `path` names now, or why it names none.
    pub fn of(path: &Path) -> Result<FileId, String> {
        std::fs::metadata(path)
            .map(|m| FileId {
                dev: m.dev(),
                ino: m.ino(),
            })
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => "the ledger file was deleted".to_string(),
                _ => format!("the ledger file cannot be checked: {e}"),
            })
    }
}

/// What a commit changes on disk: the file's and the WAL's identity, size
/// and modification time.
type Stamp = [Option<(u64, u64, u64, i64, i64)>; 2];

fn stamp(path: &Path) -> Stamp {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    [one(path), one(Path::new(&wal))]
}

pub struct Watch {
    /// None until the connection opened behind the gate arrives.
    ledger: Option<Ledger>,
    opening: Option<Receiver<Result<Ledger, String>>>,
    path: PathBuf,
    /// The file opened, for a ledger file; None when a server holds it.
    opened: Option<FileId>,
    stamp: Stamp,
    version: Option<i64>,
    /// Asking for data_version failed; said once until it answers again.
    lost: bool,
    /// The path no longer names the opened file; said once.
    replaced: bool,
    ask_anyway_at: Instant,
    /// When the last change was told; a change seen within
    /// [`NOTICE_GAP`] of it waits (`held`) for a poll after the gap.
    told_at: Option<Instant>,
    held: bool,
}

impl Watch {
    /// Watches the ledger through `ledger` (a read-only connection of its
    /// own) and, for a ledger file, the file `opened` names.
    pub fn new(ledger: Ledger, opened: Option<FileId>, now: Instant) -> Watch {
        let path = ledger.path().to_path_buf();
        Watch {
            stamp: stamp(&path),
            version: ledger.data_version().ok(),
            ledger: Some(ledger),
            opening: None,
            path,
            opened,
            lost: false,
            replaced: false,
            ask_anyway_at: now + ASK_ANYWAY_EVERY,
            told_at: None,
            held: false,
        }
    }

    /// Watches the server's ledger at `path` through a connection of its
    /// own, opened on a thread once `gate` opens (after the first page):
    /// nothing is said until it has. Its first answer counts as a change,
    /// so a commit made before it opened is reread.
    pub fn opening(path: PathBuf, gate: Gate, now: Instant) -> Watch {
        let (tx, rx) = mpsc::channel();
        let address = path.clone();
        std::thread::spawn(move || {
            gate.wait();
            let opened = group::open(&address, Access::ReadOnly).map(|(ledger, _)| ledger);
            let _ = tx.send(opened.map_err(|e| e.to_string()));
        });
        Watch {
            stamp: stamp(&path),
            version: None,
            ledger: None,
            opening: Some(rx),
            path,
            opened: None,
            lost: false,
            replaced: false,
            ask_anyway_at: now + ASK_ANYWAY_EVERY,
            told_at: None,
            held: false,
        }
    }

    /// Why the path no longer names the file that was opened, if it does
    /// not: checked again right before each decision is written.
    pub fn file_problem(&self) -> Option<String> {
        let opened = self.opened?;
        match FileId::of(&self.path) {
            Ok(id) if id == opened => None,
            Ok(_) => Some("the ledger path now names another file (replaced or moved)".to_string()),
            Err(why) => Some(why),
        }
    }

    /// What changed since the last poll, as messages for the model.
    pub fn poll(&mut self, now: Instant) -> Vec<Msg> {
        let mut out = Vec::new();
        match (self.file_problem(), self.replaced) {
            (Some(why), false) => {
                self.replaced = true;
                out.push(Msg::FileReplaced(why));
            }
            (None, true) => {
                self.replaced = false;
                out.push(Msg::FileRestored);
            }
            _ => {}
        }
        if self.replaced {
            return out;
        }
        // A file's commits show on disk first; a server's ledger has no
        // file, and asking it costs nothing until a notice arrives.
        if self.opened.is_some() {
            let stamp = stamp(&self.path);
            let ask_anyway = now >= self.ask_anyway_at;
            if stamp == self.stamp && !ask_anyway && !self.lost && !self.held {
                return out;
            }
            self.stamp = stamp;
            self.ask_anyway_at = now + ASK_ANYWAY_EVERY;
        }
        if let Some(why) = self.take_opened()
            && !std::mem::replace(&mut self.lost, true)
        {
            out.push(Msg::LiveLost(why));
        }
        let Some(ledger) = &self.ledger else {
            return out;
        };
        match ledger.data_version() {
            Ok(v) => {
                if std::mem::take(&mut self.lost) {
                    out.push(Msg::LiveRestored);
                }
                let early = self.told_at.is_some_and(|at| now < at + NOTICE_GAP);
                self.held = self.version != Some(v) && early;
                if self.version != Some(v) && !early {
                    self.version = Some(v);
                    self.told_at = Some(now);
                    out.push(Msg::LedgerChanged);
                }
            }
            // Said once, not every poll: the status line keeps it.
            Err(e) if !self.lost => {
                self.lost = true;
                out.push(Msg::LiveLost(e.to_string()));
            }
            Err(_) => {}
        }
        out
    }

    /// Takes the watching connection opened behind the gate when it has
    /// arrived; why it could not be opened, if it could not.
    fn take_opened(&mut self) -> Option<String> {
        let opened = match self.opening.as_ref()?.try_recv() {
            Ok(opened) => opened,
            Err(TryRecvError::Empty) => return None,
            Err(TryRecvError::Disconnected) => Err("the watcher did not open".to_string()),
        };
        self.opening = None;
        match opened {
            Ok(ledger) => {
                self.ledger = Some(ledger);
                None
            }
            Err(why) => Some(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Access;

    fn watched() -> (tempfile::TempDir, PathBuf, Watch) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        Ledger::create(&path).unwrap();
        let (ledger, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
        let watch = Watch::new(ledger, Some(FileId::of(&path).unwrap()), Instant::now());
        (dir, path, watch)
    }

    #[test]
    fn a_deleted_ledger_is_said_once_and_a_restored_one_too() {
        let (dir, path, mut watch) = watched();
        assert_eq!(watch.poll(Instant::now()), Vec::<Msg>::new());
        let aside = dir.path().join("aside.db");
        std::fs::rename(&path, &aside).unwrap();
        assert_eq!(
            watch.poll(Instant::now()),
            vec![Msg::FileReplaced("the ledger file was deleted".to_string())]
        );
        assert!(watch.poll(Instant::now()).is_empty());
        std::fs::rename(&aside, &path).unwrap();
        assert_eq!(watch.poll(Instant::now()), vec![Msg::FileRestored]);
    }

    #[test]
    fn a_ledger_replaced_by_another_file_is_not_the_one_opened() {
        let (dir, path, watch) = watched();
        let other = dir.path().join("other.db");
        Ledger::create(&other).unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(
            watch.file_problem().as_deref(),
            Some("the ledger path now names another file (replaced or moved)")
        );
    }

    #[test]
    fn another_process_commit_is_seen() {
        let (_dir, path, mut watch) = watched();
        let mut writer = Ledger::open(&path, Access::ReadWrite).unwrap().0;
        writer
            .import(
                &crate::app::testkit::fixture(),
                &crate::app::testkit::contracts(),
            )
            .unwrap();
        assert_eq!(watch.poll(Instant::now()), vec![Msg::LedgerChanged]);
        assert!(watch.poll(Instant::now()).is_empty());
    }

    #[test]
    fn commits_close_together_are_told_once_a_gap_and_the_last_is_never_lost() {
        let (_dir, path, mut watch) = watched();
        let mut writer = Ledger::open(&path, Access::ReadWrite).unwrap().0;
        let mut commit = |key: &str| {
            let mut ops = crate::app::testkit::fixture();
            ops.truncate(1);
            ops[0].idem_key = key.to_string();
            writer
                .import(&ops, &crate::app::testkit::contracts())
                .unwrap();
        };
        let start = Instant::now();
        commit("k-gap-1");
        assert_eq!(watch.poll(start), vec![Msg::LedgerChanged]);
        commit("k-gap-2");
        let soon = start + NOTICE_GAP / 3;
        assert!(watch.poll(soon).is_empty(), "within the gap: held");
        assert!(
            watch.poll(soon + NOTICE_GAP / 3).is_empty(),
            "still held, with no new commit"
        );
        assert_eq!(
            watch.poll(start + NOTICE_GAP),
            vec![Msg::LedgerChanged],
            "told once the gap has passed, though nothing was committed since"
        );
        assert!(watch.poll(start + NOTICE_GAP * 2).is_empty());
    }
}
