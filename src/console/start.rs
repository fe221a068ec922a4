//! The console's first state, before any connection but the reader's: the
//! model built from the settings and the ledger the reader opened, and what
//! opening has to tell the operator. Pure setup; the shell ([`crate::console::shell`])
//! runs it.

use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::app::{App, LedgerAccess, Msg};
use crate::cli::config::Config;
use crate::console::effects::read_drill;
use crate::console::input::keymap::Keymap;
use crate::error::{Error, Result};
use crate::store::{Access, Ledger, OpenReport, Progress};

/// The access the settings ask for (`--read-only` or not).
pub fn access(config: &Config) -> Access {
    if config.read_only {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    }
}

/// The model as the console starts: the ledger's name, who decides, the
/// keymap and colours [`Config`] chose, the drill files read, and the
/// adoption's first step when the ledger is being adopted.
pub fn new_app(
    reader: &Ledger,
    read_only: bool,
    adopting: bool,
    drills: &[PathBuf],
    config: &Config,
) -> Result<App> {
    let keymap = load_keymap(config.keymap.as_deref())?;
    // Read-only without a name: "(none)" is shown, never written.
    let operator = config
        .operator
        .clone()
        .unwrap_or_else(|_| "(none)".to_string());
    let mut app = App::new(
        // The ledger's own name: a PostgreSQL address may hold a password.
        reader.path().display().to_string(),
        operator,
        read_only,
        keymap,
        Utc::now(),
    );
    app.color = config.colour;
    app.reading.filters_scan = reader.filters_scan();
    app.reading.text_search = reader.text_search();
    app.mouse = config.mouse;
    app.drills.files = drills.iter().map(|p| read_drill(p)).collect();
    if adopting {
        app.access = LedgerAccess::Adopting(Progress {
            step: "waiting for the write lock".to_string(),
            done: 0,
            total: 1,
        });
    }
    Ok(app)
}

/// Why the ledger opened takes no write though one was asked for: a
/// writable ledger that can take none now (no primary reachable) opens
/// read-only rather than fail each decision, and turns writable when the
/// writer finds that writes go through; any other reason is for good.
pub fn read_only_unasked(app: &mut App, why: Option<String>) {
    match why {
        Some(why) if !app.read_only() => app.access = LedgerAccess::Unavailable(why),
        why => app.read_only_reason = why,
    }
}

/// What opening the ledger has to tell the operator, in the order shown.
pub fn open_notices(adopting: bool, report: OpenReport, config: &Config) -> Vec<Msg> {
    // The missing operator comes last so it is what the status line shows:
    // it is the one the operator can fix.
    [
        adopting.then(|| {
            Msg::Notice(
                "adopting the ledger (indexes and summaries for a big ledger take a while); \
                 read-only until it is done"
                    .to_string(),
            )
        }),
        report.upgraded.map(Msg::Notice),
        report
            .read_only_reason
            .map(|r| Msg::Notice(format!("read-only: {r}"))),
        report.not_adopted.map(Msg::Notice),
        report.model_aside.map(Msg::Notice),
        config.read_only_reason.clone().map(Msg::Notice),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Reads the keymap file [`Config`] chose, or the default keys.
fn load_keymap(path: Option<&Path>) -> Result<Keymap> {
    let text = match path {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|source| Error::Io {
            path: p.to_path_buf(),
            doing: "reading the keymap".to_string(),
            source,
        })?),
        None => None,
    };
    Keymap::load(text.as_deref()).map_err(|e| {
        Error::Usage(format!(
            "{}: {e}",
            path.map_or("keymap".to_string(), |p| p.display().to_string())
        ))
    })
}
