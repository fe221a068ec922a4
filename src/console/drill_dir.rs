//! The folder `--drill-dir` watches: which `*.json` files in it (and
//! `drill-*/drill-results.json`, a run's own folder) are new or changed
//! since the last look (one listing and a `stat` per file, asked on
//! the shell's poll tick), and reading them on a thread of their own, each
//! answered as [`Msg::DrillLoaded`]. Never reads a file on the caller's
//! thread and never touches the model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::SystemTime;

use crate::app::Msg;
use crate::console::effects::read_drill;

/// What a file looked like when it was last read: a file still being
/// written is read again once it changes.
type Seen = (Option<SystemTime>, u64);

/// The results file in a run's own folder.
const RUN_FILE: &str = "drill-results.json";

pub struct DrillDir {
    dir: PathBuf,
    seen: HashMap<PathBuf, Seen>,
}

impl DrillDir {
    pub fn new(dir: &Path) -> DrillDir {
        DrillDir {
            dir: dir.to_path_buf(),
            seen: HashMap::new(),
        }
    }

    /// The `*.json` files that appeared or changed since the last call,
    /// sorted by name. A folder that cannot be listed gives none: it may
    /// come back, and the files already loaded stay shown.
    pub fn changed(&mut self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut changed: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter_map(|p| {
                // `settle drill run` (and the console's `D`) write a run
                // in a folder of its own: `drill-<stamp>/drill-results.json`.
                let run = p.file_name()?.to_str()?.starts_with("drill-") && p.is_dir();
                Some(if run { p.join(RUN_FILE) } else { p })
            })
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|path| {
                let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
                let now: Seen = (meta.modified().ok(), meta.len());
                (self.seen.insert(path.clone(), now) != Some(now)).then_some(path)
            })
            .collect();
        changed.sort();
        changed
    }
}

/// Reads and analyses `paths` off the caller's thread, answering each
/// with [`Msg::DrillLoaded`] on `answers`.
pub fn read_in_background<T>(paths: Vec<PathBuf>, answers: Sender<T>)
where
    T: From<Msg> + Send + 'static,
{
    if paths.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        for path in paths {
            let loaded = Msg::DrillLoaded(Box::new(read_drill(&path)));
            if answers.send(loaded.into()).is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_or_rewritten_json_file_is_named_once_other_files_never() {
        let dir = tempfile::tempdir().unwrap();
        let mut watched = DrillDir::new(dir.path());
        std::fs::write(dir.path().join("a.json"), "{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        assert_eq!(watched.changed(), [dir.path().join("a.json")]);
        assert!(watched.changed().is_empty(), "seen already");
        std::fs::write(dir.path().join("a.json"), "{\"format\": 1}").unwrap();
        assert_eq!(watched.changed(), [dir.path().join("a.json")], "rewritten");
    }

    #[test]
    fn a_runs_own_folder_is_looked_into_for_its_results_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut watched = DrillDir::new(dir.path());
        let run = dir.path().join("drill-20261201T101500000");
        std::fs::create_dir(&run).unwrap();
        assert!(watched.changed().is_empty(), "no results yet");
        std::fs::write(run.join("drill-results.json"), "{}").unwrap();
        std::fs::write(run.join("other.json"), "{}").unwrap();
        std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::fs::write(dir.path().join("elsewhere/x.json"), "{}").unwrap();
        assert_eq!(watched.changed(), [run.join("drill-results.json")]);
        assert!(watched.changed().is_empty(), "seen already");
    }
}
