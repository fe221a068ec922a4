//! The reference receiver's own database, not a ledger: the effects it
//! carried out and the idempotency keys it remembers, as `settle receiver`
//! serves them to the probe and the worker: a receiver that keeps its word
//! on idempotency keys, to probe and retry against. An effect
//! and its key record are written in one `BEGIN IMMEDIATE` transaction, so
//! two retries of one key at once make exactly one effect. It never opens
//! or writes a ledger.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::error::{Error, Result};
use crate::store::sqlite::error::sqlite;

/// How long a call waits for another call's write lock: many workers may
/// retry at once, and a receiver that gives up early turns a sure replay
/// into a failed attempt.
const WAIT: Duration = Duration::from_secs(30);

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS effects (
    id          INTEGER PRIMARY KEY,
    result_id   TEXT NOT NULL,
    account     TEXT NOT NULL,
    op_type     TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint TEXT,
    params      TEXT,
    attempt     INTEGER,
    created_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idem_keys (
    account          TEXT NOT NULL,
    op_type          TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    fingerprint      TEXT,
    params           TEXT,
    effect_id        INTEGER NOT NULL REFERENCES effects(id),
    remembered_until INTEGER NOT NULL,
    PRIMARY KEY (account, op_type, idem_key)
);
CREATE TABLE IF NOT EXISTS calls (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    command   TEXT NOT NULL,
    account   TEXT NOT NULL,
    op_type   TEXT NOT NULL,
    idem_key  TEXT NOT NULL,
    attempt   INTEGER,
    answer    TEXT NOT NULL,
    result_id TEXT
);
"#;

/// The operation a call is about, as the `SETTLE_*` variables give it.
/// `fingerprint` and `params` are compared only when both the call and the
/// key record have them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRequest {
    pub account: String,
    pub op_type: String,
    pub key: String,
    pub fingerprint: Option<String>,
    pub params: Option<String>,
    /// `SETTLE_ATTEMPT` of a retry.
    pub attempt: Option<i64>,
}

/// A lookup's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupAnswer {
    /// The key is remembered and its effect is this one.
    Found { result_id: String },
    /// No record of the key, ever.
    NotFound,
    /// The key was remembered until `until` (unix seconds): the effect may
    /// exist, the receiver can no longer tell.
    Forgotten { until: i64 },
    /// The key is remembered for other params: something was done with it,
    /// but not this.
    Mismatch { why: String },
}

/// A retry's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryAnswer {
    /// A new effect was carried out (the key was not remembered).
    Done { result_id: String },
    /// The key is remembered: its first result, and no second effect.
    Replayed { result_id: String },
    /// The key is remembered for other params; nothing was done.
    Refused { why: String },
}

/// An open receiver database.
pub struct ReceiverDb {
    conn: Connection,
    path: PathBuf,
}

impl ReceiverDb {
    /// Opens `path`, creating it (and its tables) when `create` is set. A
    /// lookup does not create: a mistyped path must not answer "no record".
    pub fn open(path: &Path, create: bool) -> Result<ReceiverDb> {
        if !create && !path.is_file() {
            return Err(Error::Usage(format!(
                "{}: no receiver database there; `settle receiver record` or a retry creates one",
                path.display()
            )));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let err = |doing: &str, e| sqlite(path, doing, e);
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(|e| err("opening the receiver database", e))?;
        conn.busy_timeout(WAIT)
            .map_err(|e| err("setting the busy timeout", e))?;
        // WAL: lookups read while a retry writes. NORMAL sync: a commit
        // survives the receiver's process being killed, which is what the
        // tests do to it; only a power cut could lose the last ones.
        wal(&conn).map_err(|e| err("switching to WAL", e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| err("configuring the connection", e))?;
        if create {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| err("creating the receiver's tables", e))?;
            tx.execute_batch(SCHEMA)
                .map_err(|e| err("creating the receiver's tables", e))?;
            tx.commit()
                .map_err(|e| err("creating the receiver's tables", e))?;
        }
        Ok(ReceiverDb {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Whether the effect of `req`'s key exists, at `now` (unix seconds).
    /// The call is logged.
    pub fn lookup(&mut self, req: &KeyRequest, now: i64) -> Result<LookupAnswer> {
        self.in_transaction("answering a lookup", |tx| {
            let answer = match remembered(tx, req)? {
                None => LookupAnswer::NotFound,
                Some(k) if k.until <= now => LookupAnswer::Forgotten { until: k.until },
                Some(k) => match mismatch(req, &k) {
                    Some(why) => LookupAnswer::Mismatch { why },
                    None => LookupAnswer::Found {
                        result_id: k.result_id,
                    },
                },
            };
            let (word, id) = match &answer {
                LookupAnswer::Found { result_id } => ("found", Some(result_id.as_str())),
                LookupAnswer::NotFound => ("not_found", None),
                LookupAnswer::Forgotten { .. } => ("forgotten", None),
                LookupAnswer::Mismatch { .. } => ("mismatch", None),
            };
            log_call(tx, now, "lookup", req, word, id)?;
            Ok(answer)
        })
    }

    /// Carries out `req` unless its key is remembered: a replay returns the
    /// first result and does nothing. A new effect's key is remembered for
    /// `retention` from `now` (unix seconds). One transaction; the call is
    /// logged in it. The tests' shorthand; the commands say how.
    #[cfg(test)]
    pub fn retry(
        &mut self,
        req: &KeyRequest,
        retention: Duration,
        now: i64,
    ) -> Result<RetryAnswer> {
        let how = Behaviour {
            retention,
            ..Behaviour::default()
        };
        self.retry_as(req, &how, now)
    }

    /// [`ReceiverDb::retry`] as `how` says: a delay before the commit (a
    /// drill's `delay_ms` fault), or one of the flaws a drill must name.
    pub fn retry_as(&mut self, req: &KeyRequest, how: &Behaviour, now: i64) -> Result<RetryAnswer> {
        if how.racy {
            return self.retry_racy(req, how, now);
        }
        self.in_transaction("answering a retry", |tx| {
            let answer = match remembered(tx, req)?.filter(|k| k.until > now) {
                Some(k) => known_key(req, k, how),
                None => {
                    std::thread::sleep(how.delay);
                    RetryAnswer::Done {
                        result_id: carry_out(tx, req, None, how.retention, now)?,
                    }
                }
            };
            log_retry(tx, now, req, &answer)?;
            Ok(answer)
        })
    }

    /// The check-then-insert flaw: the key is read in one transaction and
    /// the effect written in another, a window apart, so two calls of one
    /// key at once both carry it out.
    fn retry_racy(&mut self, req: &KeyRequest, how: &Behaviour, now: i64) -> Result<RetryAnswer> {
        let known = self.in_transaction("reading the key", |tx| remembered(tx, req))?;
        if let Some(k) = known.filter(|k| k.until > now) {
            let answer = known_key(req, k, how);
            self.in_transaction("answering a retry", |tx| log_retry(tx, now, req, &answer))?;
            return Ok(answer);
        }
        std::thread::sleep(how.delay.max(RACE_WINDOW));
        self.in_transaction("answering a retry", |tx| {
            let answer = RetryAnswer::Done {
                result_id: carry_out(tx, req, None, how.retention, now)?,
            };
            log_retry(tx, now, req, &answer)?;
            Ok(answer)
        })
    }

    /// The result ids of every effect held for `account`, oldest first.
    pub fn effects(&self, account: &str) -> Result<Vec<String>> {
        let doing = |e| sqlite(&self.path, "listing effects", e);
        let mut stmt = self
            .conn
            .prepare("SELECT result_id FROM effects WHERE account = ?1 ORDER BY id")
            .map_err(doing)?;
        stmt.query_map([account], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(doing)
    }

    /// Records an effect that already happened (the first, lost attempt of
    /// a demo or a test) with `result_id`, its key remembered for
    /// `retention` from `now`. Replaces what the key was remembered for.
    pub fn record(
        &mut self,
        req: &KeyRequest,
        result_id: &str,
        retention: Duration,
        now: i64,
    ) -> Result<()> {
        self.in_transaction("recording an effect", |tx| {
            carry_out(tx, req, Some(result_id), retention, now).map(|_| ())
        })
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction: the write lock is
    /// taken before the key is read, so no other call slips between the
    /// read and the effect.
    fn in_transaction<T>(
        &mut self,
        doing: &str,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sqlite(&self.path, doing, e))?;
        let done = work(&tx).map_err(|e| sqlite(&self.path, doing, e))?;
        tx.commit().map_err(|e| sqlite(&self.path, doing, e))?;
        Ok(done)
    }
}

/// How a retry behaves beyond the contract: a delay before committing, or
/// a known flaw (for the drill's tests, never production).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Behaviour {
    /// How long a new effect's key is remembered.
    pub retention: Duration,
    /// Waited, write lock held, before the effect is committed.
    pub delay: Duration,
    /// Check the key and insert the effect in two transactions.
    pub racy: bool,
    /// Replay a remembered key whatever params come with it.
    pub ignore_params: bool,
}

/// The gap the racy flaw leaves between its check and its insert: wide
/// enough that callers started together all fall into it.
const RACE_WINDOW: Duration = Duration::from_millis(300);

/// A remembered key's answer: its first result, or a refusal when `req`
/// is not what it was remembered for (unless params are ignored).
fn known_key(req: &KeyRequest, k: Remembered, how: &Behaviour) -> RetryAnswer {
    match mismatch(req, &k).filter(|_| !how.ignore_params) {
        Some(why) => RetryAnswer::Refused { why },
        None => RetryAnswer::Replayed {
            result_id: k.result_id,
        },
    }
}

fn log_retry(
    tx: &Connection,
    now: i64,
    req: &KeyRequest,
    answer: &RetryAnswer,
) -> rusqlite::Result<()> {
    let (word, id) = match answer {
        RetryAnswer::Done { result_id } => ("effect", Some(result_id.as_str())),
        RetryAnswer::Replayed { result_id } => ("replay", Some(result_id.as_str())),
        RetryAnswer::Refused { .. } => ("refused", None),
    };
    log_call(tx, now, "retry", req, word, id)
}

/// A key record and its effect's result id.
struct Remembered {
    result_id: String,
    fingerprint: Option<String>,
    params: Option<String>,
    until: i64,
}

fn remembered(tx: &Connection, req: &KeyRequest) -> rusqlite::Result<Option<Remembered>> {
    tx.query_row(
        "SELECT e.result_id, k.fingerprint, k.params, k.remembered_until
           FROM idem_keys k JOIN effects e ON e.id = k.effect_id
          WHERE k.account = ?1 AND k.op_type = ?2 AND k.idem_key = ?3",
        params![req.account, req.op_type, req.key],
        |r| {
            Ok(Remembered {
                result_id: r.get(0)?,
                fingerprint: r.get(1)?,
                params: r.get(2)?,
                until: r.get(3)?,
            })
        },
    )
    .optional()
}

/// Writes an effect and (re)points its key at it; `result_id` is made up
/// from the effect's row id when not given.
fn carry_out(
    tx: &Connection,
    req: &KeyRequest,
    result_id: Option<&str>,
    retention: Duration,
    now: i64,
) -> rusqlite::Result<String> {
    tx.execute(
        "INSERT INTO effects (result_id, account, op_type, idem_key, fingerprint, params, attempt, created_at)
         VALUES (COALESCE(?1, ''), ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![result_id, req.account, req.op_type, req.key, req.fingerprint, req.params, req.attempt, now],
    )?;
    let id = tx.last_insert_rowid();
    let result_id = match result_id {
        Some(r) => r.to_string(),
        None => {
            let made = format!("rcv-{id:06}");
            tx.execute(
                "UPDATE effects SET result_id = ?1 WHERE id = ?2",
                params![made, id],
            )?;
            made
        }
    };
    let until = now.saturating_add(i64::try_from(retention.as_secs()).unwrap_or(i64::MAX));
    tx.execute(
        "INSERT INTO idem_keys (account, op_type, idem_key, fingerprint, params, effect_id, remembered_until)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (account, op_type, idem_key) DO UPDATE SET
           fingerprint = excluded.fingerprint, params = excluded.params,
           effect_id = excluded.effect_id, remembered_until = excluded.remembered_until",
        params![req.account, req.op_type, req.key, req.fingerprint, req.params, id, until],
    )?;
    Ok(result_id)
}

fn log_call(
    tx: &Connection,
    now: i64,
    command: &str,
    req: &KeyRequest,
    answer: &str,
    result_id: Option<&str>,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO calls (at, command, account, op_type, idem_key, attempt, answer, result_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            now,
            command,
            req.account,
            req.op_type,
            req.key,
            req.attempt,
            answer,
            result_id
        ],
    )?;
    Ok(())
}

/// Why `req` is not what the key was remembered for, if it is not. Params
/// are compared as JSON values when both parse (key order and spacing do
/// not matter), else as text.
fn mismatch(req: &KeyRequest, known: &Remembered) -> Option<String> {
    if let (Some(sent), Some(kept)) = (&req.fingerprint, &known.fingerprint)
        && sent != kept
    {
        return Some(format!("fingerprint {sent} differs from the key's {kept}"));
    }
    if let (Some(sent), Some(kept)) = (&req.params, &known.params) {
        let same = match (
            serde_json::from_str::<serde_json::Value>(sent),
            serde_json::from_str::<serde_json::Value>(kept),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => sent == kept,
        };
        if !same {
            return Some("params differ from the ones the key was used with".to_string());
        }
    }
    None
}

/// Switches `conn` to WAL. Two receivers opening a new file at once race
/// for the switch, and SQLite answers the loser "database is locked"
/// without waiting (its busy handler is not asked there), so the switch is
/// asked again until [`WAIT`] has passed.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < WAIT =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, params: &str) -> KeyRequest {
        KeyRequest {
            account: "acme".into(),
            op_type: "refund".into(),
            key: key.into(),
            fingerprint: Some("sha256:1".into()),
            params: Some(params.into()),
            attempt: Some(2),
        }
    }

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_retry_makes_one_effect_and_a_second_one_replays_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ReceiverDb::open(&dir.path().join("r.db"), true).unwrap();
        let r = req("k1", r#"{"a":1,"b":2}"#);
        assert_eq!(db.lookup(&r, 100).unwrap(), LookupAnswer::NotFound);
        let RetryAnswer::Done { result_id } = db.retry(&r, DAY, 100).unwrap() else {
            panic!("a new key is carried out");
        };
        // Same params in another key order: the same request.
        let again = req("k1", r#"{"b":2, "a":1}"#);
        assert_eq!(
            db.retry(&again, DAY, 200).unwrap(),
            RetryAnswer::Replayed {
                result_id: result_id.clone()
            }
        );
        assert_eq!(
            db.lookup(&r, 300).unwrap(),
            LookupAnswer::Found { result_id }
        );
        let effects: i64 = db
            .conn
            .query_row("SELECT count(*) FROM effects", [], |r| r.get(0))
            .unwrap();
        assert_eq!(effects, 1);
    }

    #[test]
    fn other_params_under_a_remembered_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ReceiverDb::open(&dir.path().join("r.db"), true).unwrap();
        db.record(&req("k", r#"{"a":1}"#), "ord-1", DAY, 0).unwrap();
        assert!(matches!(
            db.retry(&req("k", r#"{"a":2}"#), DAY, 10).unwrap(),
            RetryAnswer::Refused { .. }
        ));
        assert!(matches!(
            db.lookup(&req("k", r#"{"a":2}"#), 10).unwrap(),
            LookupAnswer::Mismatch { .. }
        ));
    }

    #[test]
    fn a_forgotten_key_is_carried_out_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ReceiverDb::open(&dir.path().join("r.db"), true).unwrap();
        let r = req("k", "{}");
        db.record(&r, "ord-1", Duration::from_secs(60), 0).unwrap();
        assert_eq!(
            db.lookup(&r, 60).unwrap(),
            LookupAnswer::Forgotten { until: 60 }
        );
        // The hazard a key's retention is about: a second effect.
        assert!(
            matches!(db.retry(&r, DAY, 61).unwrap(), RetryAnswer::Done { result_id } if result_id != "ord-1")
        );
    }

    #[test]
    fn the_racy_flaw_makes_two_effects_for_one_key_and_effects_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        ReceiverDb::open(&path, true).unwrap();
        let how = Behaviour {
            retention: DAY,
            racy: true,
            ..Behaviour::default()
        };
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let (path, how) = (path.clone(), how.clone());
                std::thread::spawn(move || {
                    let mut db = ReceiverDb::open(&path, true).unwrap();
                    db.retry_as(&req("k", "{}"), &how, 100).unwrap()
                })
            })
            .collect();
        for call in calls {
            assert!(matches!(call.join().unwrap(), RetryAnswer::Done { .. }));
        }
        let db = ReceiverDb::open(&path, false).unwrap();
        assert_eq!(db.effects("acme").unwrap().len(), 2);
        assert!(db.effects("other").unwrap().is_empty());
    }

    #[test]
    fn ignoring_params_replays_what_a_sound_receiver_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ReceiverDb::open(&dir.path().join("r.db"), true).unwrap();
        db.record(&req("k", r#"{"a":1}"#), "ord-1", DAY, 0).unwrap();
        let how = Behaviour {
            retention: DAY,
            ignore_params: true,
            ..Behaviour::default()
        };
        assert_eq!(
            db.retry_as(&req("k", r#"{"a":2}"#), &how, 10).unwrap(),
            RetryAnswer::Replayed {
                result_id: "ord-1".into()
            }
        );
    }

    #[test]
    fn a_lookup_never_creates_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typo.db");
        assert!(ReceiverDb::open(&path, false).is_err());
        assert!(!path.exists());
    }
}
