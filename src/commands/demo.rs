//! `settle demo`: builds a fresh ledger from the bundled sample data the way
//! a service would (plain SQL, schema version 0), lets the console adopt it,
//! records one earlier operator decision so every state is present, and opens
//! the console on it. Beside the ledger it writes a `receivers.toml` that
//! points at settle's reference receiver (`settle receiver`) and seeds that
//! receiver's database, so probes and retries have someone to ask. The data
//! is compiled in, so the demo works from any folder of a fresh clone.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::cli::ListFormat;
use crate::cli::config::Config;
use crate::domain::{DecisionDraft, DecisionKind, OperationId};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::reference_receiver::db::{KeyRequest, ReceiverDb};
use crate::store::Ledger;

/// The sample ledger, as a service's SQL script.
pub const SAMPLE_LEDGER_SQL: &str = include_str!("../../sample-data/ledger.sql");
/// Results of the reference retry drill, copied in as data.
pub const SAMPLE_DRILL_JSON: &str = include_str!("../../sample-data/drill-results.json");

/// Operator name on the decision the sample history already holds.
const SAMPLE_OPERATOR: &str = "sample-oncall";

/// The sample ledger, open, with where it, the drill file and the
/// receivers are.
pub struct Demo {
    pub ledger: Ledger,
    pub ledger_path: PathBuf,
    pub drill_path: PathBuf,
    /// `receivers.toml`, running the reference receiver on `receiver_db`.
    pub receivers_path: PathBuf,
    pub receiver_db: PathBuf,
}

/// What the demo's receiver already holds, by sample operation: the effects
/// whose replies were lost, and one key the order gateway has forgotten.
/// Every other sample key is unknown to it (a lookup says "no record").
const RECEIVER_SEEDS: &[(i64, &str, Seed)] = &[
    // The committed effect the ledger's events show: a lookup finds it.
    (1, "report-8812", Seed::Remembered),
    (14, "ord-88301", Seed::Remembered),
    // The refund the earlier shift queued a retry for did happen; its
    // reply was lost. The worker's same-key retry is a replay: one effect.
    (15, "re-5501", Seed::Remembered),
    // The gateway kept this key 24 hours and it is 26 hours old: a lookup
    // cannot tell any more, which is why a same-key retry is refused.
    (3, "ord-88120", Seed::Forgotten),
];

#[derive(Clone, Copy)]
enum Seed {
    Remembered,
    Forgotten,
}

/// Builds the sample ledger and drill file in `dir`.
pub fn build(dir: &Path, now: DateTime<Utc>) -> Result<Demo> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        doing: "creating the demo folder".to_string(),
        source,
    })?;
    let ledger_path = dir.join("ledger.db");
    let drill_path = dir.join("drill-results.json");
    if ledger_path.exists() {
        return Err(Error::ledger(
            &ledger_path,
            "already exists",
            "give `settle demo` a new folder, or open this one with `settle PATH`",
        ));
    }
    crate::store::create_service_ledger(&ledger_path, SAMPLE_LEDGER_SQL)?;
    std::fs::write(&drill_path, SAMPLE_DRILL_JSON).map_err(|source| Error::Io {
        path: drill_path.clone(),
        doing: "writing the sample drill results".to_string(),
        source,
    })?;
    let mut ledger = super::ledger_arg::open(&ledger_path, false)?;
    // An earlier shift asked for a same-key retry of refund rfd-11977: this
    // puts a retry_pending operation with a queued request in the sample.
    let retried = OperationId(15);
    let version = ledger.detail(retried)?.operation.version;
    ledger.record_decision(
        &DecisionDraft {
            op_id: retried,
            kind: DecisionKind::RetrySameKey,
            result_id: None,
            evidence: None,
            note: Some("payments confirmed keys are kept forever; retrying".to_string()),
            override_committed: false,
            operator: SAMPLE_OPERATOR.to_string(),
            expected_version: version,
            undoes: None,
        },
        now,
    )?;
    let receiver_db = dir.join("receiver.db");
    seed_receiver(&ledger, &receiver_db, now)?;
    let receivers_path = dir.join(crate::cli::config::RECEIVERS_FILE);
    write_receivers(&receivers_path, &receiver_db)?;
    Ok(Demo {
        ledger,
        ledger_path,
        drill_path,
        receivers_path,
        receiver_db,
    })
}

/// Records [`RECEIVER_SEEDS`] in a new receiver database at `db`, each
/// under its sample operation's key, fingerprint and params.
fn seed_receiver(ledger: &Ledger, db: &Path, now: DateTime<Utc>) -> Result<()> {
    const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
    let mut receiver = ReceiverDb::open(db, true)?;
    for &(id, result_id, seed) in RECEIVER_SEEDS {
        let op = ledger.detail(OperationId(id))?.operation;
        let req = KeyRequest {
            account: op.account,
            op_type: op.op_type,
            key: op.idem_key,
            fingerprint: Some(op.fingerprint),
            params: op.params,
            attempt: Some(1),
        };
        let (at, retention) = match seed {
            Seed::Remembered => (now.timestamp() - 3600, 7 * DAY),
            Seed::Forgotten => (now.timestamp() - 26 * 3600, DAY),
        };
        receiver.record(&req, result_id, retention, at)?;
    }
    Ok(())
}

/// The demo's receivers file: every op type asks the reference receiver,
/// this very binary, on `db`.
fn write_receivers(path: &Path, db: &Path) -> Result<()> {
    #[derive(serde::Serialize)]
    struct File {
        concurrency: usize,
        receivers: std::collections::BTreeMap<&'static str, Entry>,
    }
    #[derive(serde::Serialize)]
    struct Entry {
        lookup: Vec<String>,
        retry: Vec<String>,
        timeout_s: u64,
    }
    let io = |doing: &str| {
        let doing = doing.to_string();
        move |source| Error::Io {
            path: path.to_path_buf(),
            doing,
            source,
        }
    };
    let exe = std::env::current_exe().map_err(io("finding this program for the receivers file"))?;
    let command = |what: &str| {
        [
            exe.as_os_str(),
            "receiver".as_ref(),
            what.as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
        ]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
    };
    let file = File {
        concurrency: crate::receivers::DEFAULT_CONCURRENCY,
        receivers: [(
            crate::receivers::DEFAULT_ENTRY,
            Entry {
                lookup: command("lookup"),
                retry: command("retry"),
                timeout_s: 10,
            },
        )]
        .into(),
    };
    let body = toml::to_string(&file).map_err(|e| {
        Error::ledger(
            path,
            format!("writing the receivers file: {e}"),
            "report this as a bug",
        )
    })?;
    let text = format!(
        "# The demo's receivers: settle's reference receiver (`settle receiver`)\n\
         # with its own database beside the ledger. A lookup prints the result id\n\
         # (exit 0) or exits 3 when the receiver has no record of the key; a retry\n\
         # re-sends with the same key and params. See the README's receivers section.\n\n{body}"
    );
    std::fs::write(path, text).map_err(io("writing the receivers file"))
}

/// `settle demo`: builds the sample in `dir` (a new temp folder by default)
/// and opens the console on it, or prints the queue and what to try when
/// there is no terminal. `config` comes with the demo's operator policy
/// ([`Config::for_demo`]).
pub fn run(
    dir: Option<PathBuf>,
    ledger: Option<PathBuf>,
    no_console: bool,
    config: Config,
    now: DateTime<Utc>,
) -> Result<()> {
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "settle-demo-{}-{}",
            now.format("%Y%m%d-%H%M%S"),
            std::process::id()
        ))
    });
    let mut demo = build(&dir, now)?;
    eprintln!("settle: sample ledger in {}", dir.display());
    // Another ledger (PostgreSQL): the sample built as above, then copied
    // across, so both backends start from the same rows and history.
    let named = ledger.is_some();
    if let Some(address) = ledger {
        let (mut there, _) = Ledger::open_or_create(&address)?;
        demo.ledger.copy_into(&mut there, &mut |_, _| {})?;
        eprintln!("settle: sample copied into {}", there.path().display());
        demo.ledger = there;
        demo.ledger_path = address;
    }
    // Always the demo's own receivers, never the operator's configured
    // ones: the sample's keys must not reach a real service.
    let config = Config {
        receivers: Some(demo.receivers_path.clone()),
        ..config
    };
    if !no_console && std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        // The console opens the ledger itself, with its own connections.
        drop(demo.ledger);
        return crate::console::run(&demo.ledger_path, &[demo.drill_path], None, &config);
    }
    println!("The triage queue of the sample ledger:\n");
    let colour = super::output::colour(&config);
    super::list::write_list(
        &demo.ledger,
        &Query::queue(),
        ListFormat::Table,
        100,
        colour,
        now,
    )?;
    // An address may hold a password: the commands to try name it LEDGER.
    let l = if named {
        "LEDGER".to_string()
    } else {
        demo.ledger_path.display().to_string()
    };
    let d = demo.drill_path.display();
    let r = demo.receivers_path.display();
    println!(
        "\nTry:\n  settle {l}                        the console\n  settle show {l} 1                 a committed effect with no reply\n  settle decide {l} 1 --applied --result-id report-8812 --operator you\n  settle decide {l} 2 --retry-same-key --operator you\n  settle decide {l} 3 --retry-same-key --operator you   (refused: key expired)\n  settle probe {l} 1 2 3 --receivers {r} --operator you   ask the receiver by key\n  settle worker {l} --once --receivers {r}   run the queued same-key retry (15)\n  settle audit {l}\n  settle drill show {d}\n\nReceivers: {r} runs `settle receiver` on {db};\n  it has the effects of operations 1, 14 and 15, has forgotten 3's key, and\n  has no record of the others.",
        db = demo.receiver_db.display()
    );
    Ok(())
}
