//! Foreign ledgers for the console benchmark: written with plain SQL as a
//! service would (ledger-v1 tables, `user_version` 0, the service's own
//! unique index and nothing of settle's), so settle has to adopt them. Owns
//! the generator and its cache under `target/bench-ledgers/`; it must not go
//! through settle's import or adoption, or the benchmark would measure a
//! ledger no service writes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{Connection, params};

/// Accounts `acct-0000` .. `acct-4999`.
pub const ACCOUNTS: u64 = 5_000;
pub const OP_TYPES: [&str; 5] = [
    "create_report",
    "place_order",
    "refund_payment",
    "send_invoice",
    "transfer_funds",
];
/// Errors attempts end with; `timeout` appears in two of them, as in life.
const ERRORS: [&str; 6] = [
    "timeout",
    "connection reset by peer",
    "read timeout after 30s",
    "HTTP 503 service unavailable",
    "TLS handshake failed",
    "provider returned 500",
];
/// The seed every cached ledger is built from; a new seed is a new file name.
pub const SEED: u64 = 8;
/// Events of the one operation whose detail the benchmark opens.
pub const BIG_EVENTS: u64 = 1_000;
/// Operations are spaced this far apart from `BASE_EPOCH`, oldest first.
const STEP_MS: u64 = 250;
/// 2026-10-01T00:00:00Z: every created_at is in the past of any run.
const BASE_EPOCH: i64 = 1_790_812_800;
/// Live reservations lease until far in the future, stale ones have lapsed,
/// whenever the benchmark runs: the queue is the same every run.
const LIVE_LEASE: &str = "2099-01-01T00:00:00Z";

/// The ledger-v1 service tables, as a service creates them: the unique
/// constraint comes as a named index after the data (faster to build; the
/// same rule).
const SERVICE_DDL: &str = r#"
CREATE TABLE operations (
    id INTEGER PRIMARY KEY, account TEXT NOT NULL, op_type TEXT NOT NULL,
    idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL, params TEXT,
    state TEXT NOT NULL, result_id TEXT, max_attempts INTEGER NOT NULL,
    deadline_at TEXT, lease_expires_at TEXT, key_expires_at TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE attempts (
    op_id INTEGER NOT NULL REFERENCES operations(id), attempt INTEGER NOT NULL,
    started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL,
    error TEXT, response TEXT, PRIMARY KEY (op_id, attempt)
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, attempt INTEGER,
    at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT
);
"#;
const SERVICE_INDEXES: &str =
    "CREATE UNIQUE INDEX service_operations_key ON operations (account, op_type, idem_key);";

/// splitmix64: one independent, deterministic stream per (seed, operation).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// RFC 3339 UTC from seconds since the epoch, without a formatter per call
/// (chrono's strftime costs more than the insert at ten million rows).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The state mix: about a quarter of the ledger needs a person, as on the
/// production ledger the targets were set against. Per mille.
fn state_for(r: u64) -> (&'static str, bool) {
    match r % 1000 {
        0..=119 => ("unknown", false),
        120..=179 => ("exhausted", false),
        180..=199 => ("conflict", false),
        200..=239 => ("reserved", true),  // stale: lease lapsed
        240..=259 => ("reserved", false), // live: an attempt owns it
        260..=309 => ("not_applied", false),
        _ => ("completed", false),
    }
}

/// One attempt row: (attempt, started, ended, outcome, error).
type Attempt = (
    u64,
    String,
    Option<String>,
    &'static str,
    Option<&'static str>,
);
/// One event row: (attempt, at, event, detail).
type Event = (Option<u64>, String, &'static str, Option<String>);

/// Writes `n` operations to a new file at `path` (which must not exist).
pub fn generate(path: &Path, n: u64, seed: u64) -> rusqlite::Result<()> {
    let mut conn = Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -200000;",
    )?;
    conn.execute_batch(SERVICE_DDL)?;
    const BATCH: u64 = 200_000;
    let mut event_id: u64 = 0;
    let mut start = 0;
    let t0 = Instant::now();
    while start < n {
        let end = (start + BATCH).min(n);
        let tx = conn.transaction()?;
        {
            let mut op = tx.prepare(
                "INSERT INTO operations (id, account, op_type, idem_key, fingerprint, params, \
                 state, result_id, max_attempts, deadline_at, lease_expires_at, key_expires_at, \
                 created_at, updated_at, version) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 3, NULL, ?9, ?10, ?11, ?12, ?13)",
            )?;
            let mut att = tx.prepare(
                "INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
            )?;
            let mut ev = tx.prepare(
                "INSERT INTO events (id, op_id, attempt, at, event, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for i in start..end {
                let id = i + 1;
                let mut rng = Rng(seed ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93));
                let big = id == n; // the newest operation: 1,000 events, first in the queue
                let (state, stale) = if big {
                    ("unknown", false)
                } else {
                    state_for(rng.next())
                };
                let created = BASE_EPOCH + (i * STEP_MS / 1000) as i64;
                let t = |s: i64| rfc3339(created + s);
                let n_att = match state {
                    "exhausted" => 3,
                    "conflict" | "reserved" => 1,
                    "completed" => [1, 1, 1, 1, 1, 1, 1, 2, 2, 3][rng.below(10) as usize],
                    _ => 1 + rng.below(3),
                };
                let n_att = if big { 3 } else { n_att };
                let mut attempts: Vec<Attempt> = Vec::with_capacity(3);
                let mut events: Vec<Event> = vec![(None, t(0), "reserved", None)];
                for a in 1..=n_att {
                    let last = a == n_att;
                    let began = (a as i64 - 1) * 40 + 1;
                    let (outcome, error, event) = match state {
                        "completed" if last => ("success", None, "success"),
                        "not_applied" if last => ("error", Some("card declined"), "provider_error"),
                        "conflict" => ("conflict", None, "rejected_mismatch"),
                        "reserved" => ("in_flight", None, "attempt_started"),
                        _ => {
                            let e = ERRORS[rng.below(ERRORS.len() as u64) as usize];
                            let outcome = if e.contains("timeout") {
                                "timeout"
                            } else {
                                "error"
                            };
                            (
                                outcome,
                                Some(e),
                                if outcome == "timeout" {
                                    "timeout"
                                } else {
                                    "provider_error"
                                },
                            )
                        }
                    };
                    let ended = (outcome != "in_flight").then(|| t(began + 30));
                    attempts.push((a, t(began), ended, outcome, error));
                    if events.len() < 5 {
                        events.push((Some(a), t(began + 30), event, None));
                    }
                }
                // A committed effect seen before the reply was lost: what
                // makes a not_applied decision dangerous.
                if events.len() < 5 && (state == "completed" || rng.below(4) == 0) {
                    let at = t(n_att as i64 * 40);
                    events.push((
                        None,
                        at,
                        "committed",
                        Some(format!("{{\"effect_id\":\"eff-{id}\"}}")),
                    ));
                }
                if state == "exhausted" && events.len() < 5 {
                    events.push((None, t(121), "budget_exhausted", None));
                }
                if big {
                    for k in events.len() as u64..BIG_EVENTS {
                        events.push((
                            Some(3),
                            t(200 + k as i64),
                            "provider_poll",
                            Some(format!("{{\"poll\":{k}}}")),
                        ));
                    }
                }
                let account = format!("acct-{:04}", rng.below(ACCOUNTS));
                let op_type = OP_TYPES[rng.below(OP_TYPES.len() as u64) as usize];
                let key = format!("k-{id:06}");
                let (h1, h2) = (rng.next(), rng.next());
                let fingerprint = format!("sha256:{h1:016x}{h2:016x}{h1:016x}{h2:016x}");
                let params = (rng.below(10) != 0).then(|| {
                    format!(
                        "{{\"amount\":{},\"currency\":\"EUR\",\"ref\":\"{key}\"}}",
                        h1 % 100_000
                    )
                });
                let result_id = (state == "completed").then(|| format!("res-{id}"));
                let lease = (state == "reserved").then(|| {
                    if stale {
                        t(600)
                    } else {
                        LIVE_LEASE.to_string()
                    }
                });
                let key_expires = (rng.below(5) == 0).then(|| t(7 * 86_400));
                let updated = events.last().map(|e| e.1.clone()).unwrap_or_else(|| t(0));
                op.execute(params![
                    id as i64,
                    account,
                    op_type,
                    key,
                    fingerprint,
                    params,
                    state,
                    result_id,
                    lease,
                    key_expires,
                    t(0),
                    updated,
                    (events.len() - 1) as i64
                ])?;
                for (a, started, ended, outcome, error) in &attempts {
                    att.execute(params![
                        id as i64, *a as i64, started, ended, outcome, error
                    ])?;
                }
                for (a, at, event, detail) in &events {
                    event_id += 1;
                    ev.execute(params![
                        event_id as i64,
                        id as i64,
                        a.map(|a| a as i64),
                        at,
                        event,
                        detail
                    ])?;
                }
            }
        }
        tx.commit()?;
        start = end;
        eprint!(
            "\r  generating {}: {end}/{n} operations ({:.0} s)",
            path.display(),
            t0.elapsed().as_secs_f64()
        );
    }
    eprintln!();
    conn.execute_batch(SERVICE_INDEXES)?;
    conn.execute_batch("PRAGMA journal_mode = DELETE;")?;
    Ok(())
}

/// Where the pristine (never opened by settle) ledger of `n` operations is
/// cached.
pub fn pristine_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("foreign-{n}.db"))
}

/// The cached pristine ledger of `n` operations, built first when absent.
/// Written under a temporary name and renamed when complete, so an
/// interrupted build is never mistaken for a ledger.
pub fn ensure(dir: &Path, n: u64) -> Result<PathBuf, String> {
    let path = pristine_path(dir, n);
    if path.exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!("foreign-{n}.db.partial"));
    let _ = std::fs::remove_file(&tmp);
    let start = Instant::now();
    generate(&tmp, n, SEED).map_err(|e| format!("generating {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!(
        "  built {} in {:.0} s ({} MiB)",
        path.display(),
        start.elapsed().as_secs_f64(),
        std::fs::metadata(&path).map(|m| m.len() >> 20).unwrap_or(0)
    );
    Ok(path)
}
