//! The reference receiver's command line (`settle receiver ...`), apart
//! from [`crate::cli`] so each file reads in one sitting.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `settle receiver ...`: run by settle's probe and worker with the
/// operation in `SETTLE_*` variables, or by hand to seed a database.
#[derive(Debug, Subcommand)]
pub enum ReceiverCommand {
    /// Does the effect of $SETTLE_KEY exist? Prints its result id (exit 0);
    /// exit 3: no record of the key; exit 4: cannot tell (the key was
    /// forgotten, or used with other params).
    Lookup {
        /// The receiver's database; it must exist.
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
    },
    /// Carry out the operation in $SETTLE_* unless its key is remembered,
    /// then print the result id (a remembered key replays its first result;
    /// no second effect). Exit 3: refused, the key was used with other
    /// params. Honours $SETTLE_DRILL_FAULT: `before_effect` (exit 5, nothing
    /// changed), `after_effect` (commit, then exit 5 without the id),
    /// `delay_ms=N` (wait N ms before committing).
    Retry {
        /// The receiver's database; created when missing.
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        #[command(flatten)]
        retention: RetentionArg,
        /// Wait this long after the effect is committed before replying:
        /// a reply lost in the network, for tests that kill a worker
        /// mid-retry.
        #[arg(long, value_name = "MS", default_value_t = 0)]
        reply_delay_ms: u64,
        /// For tests of `settle drill run` only: answer with a known flaw
        /// (`race`: check the key, then insert in a second transaction;
        /// `ignore-params`: replay whatever params come; `forget-early`:
        /// remember keys a quarter of --retention-s). Never in production.
        #[arg(long, value_enum, hide = true)]
        flaw: Option<Flaw>,
    },
    /// Print the result id of every effect held for $SETTLE_ACCOUNT, one a
    /// line (the receivers contract's `effects`, for `settle drill run`).
    Effects {
        /// The receiver's database; it must exist.
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
    },
    /// Record an effect that already exists (a first attempt whose reply
    /// was lost), to seed a demo or a test.
    Record {
        /// The receiver's database; created when missing.
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        #[arg(long)]
        account: String,
        #[arg(long)]
        op_type: String,
        #[arg(long)]
        key: String,
        /// The effect's id, as a lookup or a replay will print it.
        #[arg(long)]
        result_id: String,
        /// Left out: any fingerprint matches the key.
        #[arg(long)]
        fingerprint: Option<String>,
        /// The params JSON; left out: any params match the key.
        #[arg(long)]
        params: Option<String>,
        #[command(flatten)]
        retention: RetentionArg,
    },
}

#[derive(Debug, Args, Clone, Copy)]
pub struct RetentionArg {
    /// How long the receiver remembers a key it records, in seconds
    /// (0: forgotten at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 604_800)]
    pub retention_s: u64,
}

/// A deliberately broken receiver, so tests can show that a drill names
/// each flaw. Hidden from help: it exists for the drill's own tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Flaw {
    /// Check-then-insert in two transactions: concurrent callers of one
    /// key both carry it out.
    Race,
    /// A remembered key replays whatever params come with it.
    IgnoreParams,
    /// Keys are forgotten after a quarter of the declared retention.
    ForgetEarly,
}
