//! The command line: clap types, and the [`Flags`] that
//! [`crate::cli::config`] resolves into settings. Parsing only; nothing here
//! opens a ledger or prints.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cli::config::Flags;
use crate::cli::ledger_set::LedgerSet;
pub use crate::reference_receiver::args::{ReceiverCommand, RetentionArg};
use crate::store::postgres::Reads;

const AFTER_HELP: &str = "\
LEDGER is a SQLite file, or a PostgreSQL address: postgres://USER@HOST/DB,
postgresql://… or libpq's key=value form ('host=db1 dbname=ledger'), filled
from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and PGSSLMODE as psql does.
@NAME is a ledger named in $XDG_CONFIG_HOME/settle/config.toml (`settle ledgers`),
or a [groups.NAME] of them: list, count and show read several ledgers merged.

Exit status: 0 ok, 1 error (`audit --verify`: the chain is broken), 2 usage,
3 refused by a rule of the contract, 4 version conflict (another writer
changed the operation; nothing written), 5 ledger busy (another process held
the write lock past --wait; nothing written), 6 `probe`: a lookup read
unknown (recorded). `decide --filter`: 2 when the
count differs from --expect-count (nothing written), 3 when any row was
refused, else 4 when any row changed since it was listed (the other rows are
written; stdout lists the skipped ones).

Examples:
  settle demo                                   open the console on sample data
  settle ledger.db                              open the console on a ledger
  settle list ledger.db --queue                 what needs a person
  settle list ledger.db --filter 'type:create_report attempts>2'
  settle list @incident --queue                 several ledgers, merged, rows named
  settle count pay.db ship.db --queue           each ledger's count and the total
  settle show ledger.db acme/create_report/k-42
  settle decide ledger.db 42 --applied --result-id report-1 --expect-version 3
  settle decide ledger.db 42 --not-applied --evidence 'provider says no such order'
  settle decide ledger.db --filter 'type:create_report' --not-applied \
      --evidence 'INC-7: provider lost the batch' --expect-count 2000
  settle probe ledger.db 42 --receivers receivers.toml
  settle drill show drill-results.json";

/// Settle operations whose outcome is unknown: triage the ledger's stuck
/// operations and record, with evidence, whether each was applied.
#[derive(Debug, Parser)]
#[command(name = "settle", version, about, after_help = AFTER_HELP)]
#[command(args_conflicts_with_subcommands = true, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub console: ConsoleArgs,

    /// Where a PostgreSQL ledger's reads go when its address lists a primary and its standbys: auto (a standby when one answers, else the primary), standby, or primary. Writes always go to the primary.
    #[arg(long, global = true, value_name = "WHERE", value_parser = clap::builder::TypedValueParser::map(clap::builder::PossibleValuesParser::new(["primary", "standby", "auto"]), |s| s.parse::<Reads>().unwrap_or_default()))]
    pub reads: Option<Reads>,

    /// A mapping file that opens a team's own operations table (e.g. idempotency_keys) in a PostgreSQL database [default: mapping.toml beside the receivers file, where the database has its table].
    #[arg(long = "map", global = true, value_name = "FILE")]
    pub map: Option<std::path::PathBuf>,

    /// How long a Graphile Worker job may stay locked by its worker before it is in the queue as its dead worker's: 90s, 30m, 4h, 1h30m, 2d [default: 4h, Graphile's own lock timeout].
    #[arg(long, global = true, value_name = "DURATION", value_parser = span)]
    pub locked_after: Option<std::time::Duration>,

    /// On Graphile Worker, a not-applied decision removes the job (its remove_job, by the job's key: gone, as if never added) instead of failing it for good (permanently_fail_jobs, kept with settle's words as its error). Other ledgers ignore it.
    #[arg(long, global = true)]
    pub remove_not_applied: bool,
}

/// A span as `--locked-after` reads it ([`crate::domain::parse_span`]).
fn span(text: &str) -> Result<std::time::Duration, String> {
    crate::domain::parse_span(text).ok_or_else(|| {
        format!("'{text}' is not a span: write a number and a unit, e.g. 90s, 30m, 4h, 1h30m, 2d")
    })
}

/// Opening the console: `settle LEDGER [...]`.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// The ledger to open in the console: a SQLite file or a PostgreSQL address (postgres://…, postgresql://… or key=value), or @NAME from config.toml. Several (or @GROUP) open as one incident: one queue over all of them, each row naming its ledger, each decision written to its row's own ledger.
    #[arg(value_name = "LEDGER", num_args = 0..)]
    pub ledgers: Vec<PathBuf>,

    /// The ledgers, resolved (names given, groups expanded).
    #[arg(skip)]
    pub set: LedgerSet,

    /// A retry-drill results file to show in the Drills view (repeatable).
    #[arg(long = "drill", value_name = "FILE")]
    pub drills: Vec<PathBuf>,

    /// A folder of retry-drill results (*.json): loaded at start, and new or
    /// rewritten files are picked up while the console runs.
    #[arg(long = "drill-dir", value_name = "DIR")]
    pub drill_dir: Option<PathBuf>,

    #[command(flatten)]
    pub operator: OperatorArg,

    /// Open without writing anything (no adoption, no decisions).
    #[arg(long)]
    pub read_only: bool,

    /// A keymap file overriding the default keys.
    #[arg(long, value_name = "FILE")]
    pub keymap: Option<PathBuf>,

    #[command(flatten)]
    pub mouse: MouseArg,

    #[command(flatten)]
    pub receivers: ReceiversArg,
}

/// `--no-mouse`, for every way into the console (`settle LEDGER`, `settle
/// demo`).
#[derive(Debug, Args, Clone, Default)]
pub struct MouseArg {
    /// Leave the mouse to the terminal: no clicks or wheel in the console (with the mouse on, hold Shift to select text).
    #[arg(long)]
    pub no_mouse: bool,
}

/// `--receivers FILE`, for every command that asks receivers.
#[derive(Debug, Args, Clone, Default)]
pub struct ReceiversArg {
    /// The receivers file (lookup and retry commands, and declared contracts, per op type) [default: $XDG_CONFIG_HOME/settle/receivers.toml, if it exists].
    #[arg(long, value_name = "FILE")]
    pub receivers: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct OperatorArg {
    /// Who is deciding, for the audit trail [default: $SETTLE_OPERATOR, else the account name of your uid].
    #[arg(long, value_name = "NAME")]
    pub operator: Option<String>,
}

impl Cli {
    /// The flags that settings are resolved from (see [`crate::cli::config`]).
    pub fn flags(&self) -> Flags {
        let operator = match &self.command {
            Some(Command::Decide(args)) => args.operator.operator.clone(),
            Some(Command::Probe(args)) => args.operator.operator.clone(),
            _ => self.console.operator.operator.clone(),
        };
        let receivers = match &self.command {
            Some(Command::Worker(args)) => args.receivers.receivers.clone(),
            Some(Command::Probe(args)) => args.receivers.receivers.clone(),
            Some(Command::Show(args)) => args.receivers.receivers.clone(),
            Some(Command::Decide(args)) => args.receivers.receivers.clone(),
            _ => self.console.receivers.receivers.clone(),
        };
        let no_mouse = match &self.command {
            Some(Command::Demo { mouse, .. }) => mouse.no_mouse,
            _ => self.console.mouse.no_mouse,
        };
        Flags {
            operator,
            read_only: self.console.read_only,
            keymap: self.console.keymap.clone(),
            receivers,
            no_mouse,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new, empty ledger (ledger-v1 schema).
    Init {
        /// The new ledger: a SQLite path that must not exist, or an empty PostgreSQL database's address.
        ledger: PathBuf,
    },
    /// Adopt a ledger a service created (or migrate an older one): add
    /// settle's own tables (decisions, retry requests, probes) and build its
    /// read model beside the ledger, in short transactions that never hold
    /// the service's writes; nothing is added to the service's tables.
    /// Reading commands never do this; the first decision does it too.
    Adopt {
        /// The ledger (a SQLite file or a PostgreSQL address).
        ledger: PathBuf,
    },
    /// List operations, newest first, of one ledger or several merged into one order.
    List(ListArgs),
    /// How many operations match, per ledger and in total.
    Count(CountArgs),
    /// Show one operation: fields, attempts, events, decisions, what may be decided.
    Show(ShowArgs),
    /// Record a decision about an operation (atomic, audited, version-guarded).
    Decide(DecideArgs),
    /// Ask the receivers whether operations' effects exist (their `lookup`
    /// commands) and record each answer in the ledger as a probe.
    Probe(ProbeArgs),
    /// The decisions, newest first.
    Audit(AuditArgs),
    /// Copy a ledger into a new or empty one (SQLite or PostgreSQL, either
    /// way): every table, in id order, decisions with their chain intact,
    /// whole or not at all. A new SQLite file gets its read model built
    /// after the rows; a new PostgreSQL ledger is loaded in a schema
    /// `settle_copy_staging`, a session a table, and moved in at once.
    Copy {
        /// The ledger to copy (read only).
        source: PathBuf,
        /// A new SQLite path, or a ledger holding no operations.
        destination: PathBuf,
    },
    /// Read retry-drill results, or bring their cases into a ledger.
    Drill {
        #[command(subcommand)]
        command: DrillCommand,
    },
    /// Build a fresh ledger from the bundled sample data and open it.
    Demo {
        /// Folder for the sample ledger and drill file [default: a new folder in the temp dir].
        dir: Option<PathBuf>,
        /// Run the demo on this ledger instead (e.g. an empty PostgreSQL
        /// database, postgres://…): the sample is built in the folder, then
        /// copied into it.
        #[arg(long, value_name = "ADDRESS")]
        ledger: Option<PathBuf>,
        /// Print the queue and the commands to try instead of opening the console.
        #[arg(long)]
        no_console: bool,
        #[command(flatten)]
        mouse: MouseArg,
    },
    /// Carry out queued same-key retries: claim each request, run the receiver's retry, record how it ended. SIGTERM finishes the running retries and stops.
    Worker(WorkerArgs),
    /// The reference receiver: a small receiver with its own SQLite
    /// database, whose lookup and retry follow the receivers contract (for
    /// the demo and tests; see the README's receivers section).
    Receiver {
        #[command(subcommand)]
        command: ReceiverCommand,
    },
    /// Print shell completions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The named ledgers of $XDG_CONFIG_HOME/settle/config.toml ([ledgers.NAME] tables), each with what it points at (never a password), then the [groups.NAME] of them: `settle @NAME` and every LEDGER take them.
    Ledgers,
    /// Print the man page (roff): `settle man > ~/.local/share/man/man1/settle.1`.
    Man,
}

#[derive(Debug, Args)]
#[command(after_help = SEVERAL_HELP)]
pub struct ListArgs {
    /// The ledgers (SQLite files, PostgreSQL addresses, @NAME or @GROUP): several are merged into one order, each row naming its ledger.
    #[arg(value_name = "LEDGER", required = true, num_args = 1..)]
    pub ledgers: Vec<PathBuf>,
    /// The ledgers, resolved (names given, groups expanded).
    #[arg(skip)]
    pub set: LedgerSet,
    /// Only the triage queue: unknown, exhausted, conflict, stale reserved.
    #[arg(long)]
    pub queue: bool,
    /// Only these states (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "S[,S]")]
    pub state: Vec<String>,
    /// A filter: state:S account:A type:T key:K attempts>N err:TEXT, free text.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// The order: id, created, updated, attempts, account, type or event, then :asc or :desc [default: id:desc, newest first]. A column alone reads descending; ties go by id.
    #[arg(long, value_name = "COLUMN[:asc|desc]")]
    pub sort: Option<String>,
    /// At most this many rows [default: 100 for table; every row for json, jsonl and csv, so a pipeline never loses rows]. When rows are left out, stderr says how many.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Every matching row, read a page at a time (overrides --limit).
    #[arg(long)]
    pub all: bool,
    /// table for people; json or jsonl for scripts (exact values); csv for spreadsheets.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Accepted for old scripts: reading commands always open read-only and never adopt.
    #[arg(long, hide = true)]
    pub read_only: bool,
}

/// The after-help of the commands that read several ledgers.
const SEVERAL_HELP: &str = "\
Several ledgers (LEDGER LEDGER …, or @GROUP for [groups.GROUP] ledgers = [\"a\", \"b\"]
in config.toml) are read at once, each in its own thread. A row's ledger is
its @NAME, or for a path or address its short name: a SQLite file's stem, a
PostgreSQL database's name (a second one alike gets -2, -3, …). list merges
them in one order (the same --sort), adding a ledger column (a `ledger`
field in json, jsonl and csv); with --limit N it reads at most N from each.
An operation of one of them is NAME:ID (`settle show @incident payments:42`).
A ledger that cannot be opened or read is named on stderr, the others' rows
are still printed, and the exit status is 1.";

/// `settle count`: how many operations a filter matches.
#[derive(Debug, Args)]
#[command(after_help = SEVERAL_HELP)]
pub struct CountArgs {
    /// The ledgers (SQLite files, PostgreSQL addresses, @NAME or @GROUP): one line each, then the total.
    #[arg(value_name = "LEDGER", required = true, num_args = 1..)]
    pub ledgers: Vec<PathBuf>,
    /// The ledgers, resolved (names given, groups expanded).
    #[arg(skip)]
    pub set: LedgerSet,
    /// Only the triage queue: unknown, exhausted, conflict, stale reserved.
    #[arg(long)]
    pub queue: bool,
    /// Only these states (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "S[,S]")]
    pub state: Vec<String>,
    /// A filter, in the language of `settle list --filter`.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// text for people (one ledger: the number alone); json for scripts.
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
    Jsonl,
    Csv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = SEVERAL_HELP)]
pub struct ShowArgs {
    /// The ledger (a SQLite file, a PostgreSQL address, @NAME), or several (or @GROUP): then OP is NAME:ID.
    #[arg(value_name = "LEDGER", required = true, num_args = 1..)]
    pub ledgers: Vec<PathBuf>,
    /// The ledgers, resolved (names given, groups expanded).
    #[arg(skip)]
    pub set: LedgerSet,
    /// The operation: its id, or account/op_type/key; with several ledgers NAME:ID.
    pub op: String,
    /// text for people; json for scripts.
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Accepted for old scripts: reading commands always open read-only and never adopt.
    #[arg(long, hide = true)]
    pub read_only: bool,
    #[command(flatten)]
    pub receivers: ReceiversArg,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("decision").required(true).multiple(false))]
pub struct DecideArgs {
    /// The ledger (a SQLite file or a PostgreSQL address), or @GROUP with OP as NAME:ID; one decision is written in one transaction or not at all, --filter in one transaction per batch, in each ledger of a group its own batches.
    pub ledger: PathBuf,
    /// The ledgers LEDGER stands for (a group's several), resolved.
    #[arg(skip)]
    pub set: LedgerSet,
    /// The operation: its id, or account/op_type/key (or --filter instead); with a group NAME:ID.
    #[arg(required_unless_present = "filter", conflicts_with = "filter")]
    pub op: Option<String>,

    /// Decide every row OF THE TRIAGE QUEUE this filter matches (the language of `settle list --filter`; rows outside the queue are never touched). Needs --expect-count; written in batches, each row guarded by the version it had when listed.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// With --filter: how many rows you expect it to match. Any other count refuses (exit 2) and writes nothing, so a typo never decides thousands of rows.
    #[arg(long, value_name = "N", requires = "filter")]
    pub expect_count: Option<usize>,
    /// With --filter: show what would be written and refused, grouped by rule, and write nothing.
    #[arg(long, requires = "filter")]
    pub dry_run: bool,

    /// The effect exists: record `applied` (state completed). Needs --result-id or --evidence.
    #[arg(long, group = "decision")]
    pub applied: bool,
    /// No effect occurred: record `not_applied`. Needs --evidence; a missing reply is not evidence.
    #[arg(long, group = "decision", requires = "evidence")]
    pub not_applied: bool,
    /// Ask a worker to retry under the same key (only for idempotent receivers, key not expired).
    #[arg(long, group = "decision")]
    pub retry_same_key: bool,
    /// Cancel a retry request that no worker has claimed yet.
    #[arg(long, group = "decision")]
    pub cancel_retry: bool,
    /// Undo decision ID (the operation returns to its earlier state), if nothing changed since.
    #[arg(
        long,
        group = "decision",
        value_name = "DECISION_ID",
        conflicts_with = "filter"
    )]
    pub reopen: Option<i64>,

    /// The result identifier of the effect (for --applied).
    #[arg(long, value_name = "ID")]
    pub result_id: Option<String>,
    /// What shows the decision is right (a provider lookup, a ticket, a log line).
    #[arg(long, value_name = "TEXT")]
    pub evidence: Option<String>,
    /// Record not_applied although the events show a committed effect, or retry with the same key although the op type's latest drill found a duplicate under one key (needs --note).
    #[arg(long = "override", requires = "note")]
    pub override_committed: bool,
    /// A free note for the audit trail.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// The operation version you looked at; the decision is written only if it is still current.
    #[arg(long, value_name = "V", conflicts_with = "filter")]
    pub expect_version: Option<i64>,
    /// How long to wait for another process's write lock before giving up with exit 5, nothing written.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub wait: u64,
    #[command(flatten)]
    pub operator: OperatorArg,
    #[command(flatten)]
    pub receivers: ReceiversArg,
}

const PROBE_AFTER_HELP: &str = "\
Each lookup's answer is recorded (append-only) with its command, how it
ended, the result id found, the time and the operator, so the ledger must be
writable: a read-only ledger cannot be probed. `settle show` and the
console's detail list the probes; the console's decision form starts from
the newest one.

Exit status: 0 every lookup answered (found or not found), 6 at least one
reads unknown (all recorded; its line says why), 1 error (a probe could not
be recorded: the lookups after it are not run), 2 usage (e.g. --filter
without --limit or --all; nothing probed).

Examples:
  settle probe ledger.db 42 43 --receivers receivers.toml
  settle probe ledger.db --filter 'type:create_report' --limit 50 --format jsonl";

#[derive(Debug, Args)]
#[command(after_help = PROBE_AFTER_HELP)]
pub struct ProbeArgs {
    /// The ledger (a SQLite file or a PostgreSQL address), or @GROUP with every OP as NAME:ID of one of its ledgers; each probe is recorded in it, so it must be writable.
    pub ledger: PathBuf,
    /// The ledgers LEDGER stands for (a group's several), resolved.
    #[arg(skip)]
    pub set: LedgerSet,
    /// The operations: ids, or account/op_type/key (or --filter instead).
    #[arg(
        value_name = "OP",
        required_unless_present = "filter",
        conflicts_with = "filter"
    )]
    pub ops: Vec<String>,
    /// Probe the rows OF THE TRIAGE QUEUE this filter matches (the language of `settle list --filter`). Needs --limit N or --all, so a broad filter never sends thousands of lookups by accident.
    #[arg(long, value_name = "QUERY")]
    pub filter: Option<String>,
    /// With --filter: probe at most N of the matching rows, in list order (newest first); stderr says how many were left out.
    #[arg(long, value_name = "N", requires = "filter", conflicts_with = "all")]
    pub limit: Option<usize>,
    /// With --filter: probe every matching row.
    #[arg(long, requires = "filter")]
    pub all: bool,
    /// table for people (a line per operation as its lookup ends); json or jsonl for scripts.
    #[arg(long, value_enum, default_value_t = ProbeFormat::Table)]
    pub format: ProbeFormat,
    /// How long to wait for another process's write lock when recording a probe.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub wait: u64,
    #[command(flatten)]
    pub operator: OperatorArg,
    #[command(flatten)]
    pub receivers: ReceiversArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    Table,
    Json,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The ledger (a SQLite file or a PostgreSQL address) whose retry_requests to drain.
    pub ledger: PathBuf,
    /// Run what is claimable now, then exit (without it: keep polling until SIGTERM or SIGINT).
    #[arg(long)]
    pub once: bool,
    /// How many retries run at once, each on its own ledger connection.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub concurrency: usize,
    /// How long a claim holds a request; one not finished by then may be claimed by another worker (whose run is then a replay under the same key). Keep it above the receiver's timeout.
    #[arg(long, value_name = "S", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub lease_s: u64,
    /// Who holds the claims (retry_requests.claimed_by) [default: HOST:PID].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    #[command(flatten)]
    pub receivers: ReceiversArg,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The ledger (a SQLite file or a PostgreSQL address).
    pub ledger: PathBuf,
    /// At most this many decisions [default: 50 for table; every decision for json, jsonl and csv, so a pipeline never loses rows]. When decisions are left out, stderr says how many.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Every decision, read a page at a time (overrides --limit).
    #[arg(long)]
    pub all: bool,
    /// table for people; json or jsonl for scripts (exact values); csv for spreadsheets.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Accepted for old scripts: reading commands always open read-only and never adopt.
    #[arg(long, hide = true)]
    pub read_only: bool,
    /// Recompute the decisions' hash chain instead of listing them: "chain intact: N decisions", or the first broken link (exit 1).
    #[arg(long, conflicts_with_all = ["limit", "all", "format"])]
    pub verify: bool,
}

#[derive(Debug, Subcommand)]
pub enum DrillCommand {
    /// One line per case with an honest verdict, then the findings.
    Show {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// text for people; json for scripts.
        #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
        format: ShowFormat,
    },
    /// Bring each case into the ledger as an operation with its attempts and events.
    Import {
        file: PathBuf,
        /// The ledger (a SQLite file or a PostgreSQL address).
        ledger: PathBuf,
    },
    /// Drill an op type's real receiver at the failure boundaries (concurrency, timeouts, crashes, lost responses, changed params, key expiry); write retry-drill/1 results and a verdict.
    Run(DrillRunArgs),
}

#[derive(Debug, Args)]
pub struct DrillRunArgs {
    /// The receivers file whose entry for the op type is drilled.
    #[arg(long, value_name = "FILE")]
    pub receivers: PathBuf,
    /// The op type whose receiver is drilled.
    #[arg(long, value_name = "T")]
    pub op_type: String,
    /// The params every case sends, as JSON [default: {"drill": true}].
    #[arg(long, value_name = "JSON")]
    pub params: Option<String>,
    /// Only these cases, comma-separated [default: all]; `settle drill run --help` lists them in the README.
    #[arg(long, value_name = "CASE,...", value_delimiter = ',')]
    pub cases: Vec<String>,
    /// Callers started at once in concurrent_same_key.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(2..=64))]
    pub concurrency: u16,
    /// The longest a case waits on the clock (key retention); a longer declared retention is reported as not run.
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub max_wait: u64,
    /// The folder the run's drill-<stamp>/ folder is written in.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A ledger: its op_types row is the declared contract, and the verdict is recorded in it.
    #[arg(long, value_name = "LEDGER")]
    pub ledger: Option<PathBuf>,
}
