//! The console shell (being built on the `tui` branch).

use std::path::PathBuf;

use crate::error::{Error, Result};

pub struct Options {
    pub ledger: PathBuf,
    pub drills: Vec<PathBuf>,
    pub operator: String,
    pub read_only: bool,
    pub keymap: Option<PathBuf>,
}

pub fn run(options: Options) -> Result<()> {
    Err(Error::Usage(format!(
        "the console is not built into this settle yet; try `settle list {}`",
        options.ledger.display()
    )))
}
