//! Test fixtures: a temp ledger with one operation per situation the
//! console must show, an [`App`] on it, and key scripts driven through the
//! real keymap with effects performed synchronously against the ledger.

use chrono::{DateTime, Utc};
use tempfile::TempDir;

use super::{App, Effect, Intent, Msg, apply, update};
use crate::console::input::keymap::{Key, Keymap};
use crate::domain::{
    NewAttempt, NewEvent, NewOperation, OpTypeContract, Outcome, State, parse_time,
};
use crate::store::Ledger;

pub const NOW: &str = "2026-11-06T12:00:00Z";

pub fn now() -> DateTime<Utc> {
    parse_time(NOW).unwrap()
}

pub struct Harness {
    pub app: App,
    pub ledger: Ledger,
    pub _dir: TempDir,
}

fn op(account: &str, op_type: &str, key: &str, state: State) -> NewOperation {
    NewOperation {
        account: account.into(),
        op_type: op_type.into(),
        idem_key: key.into(),
        fingerprint: "sha256:9f2c1e0b7a".into(),
        params: Some(r#"{"report":"weekly-sales","week":"2026-W45"}"#.into()),
        state,
        result_id: None,
        max_attempts: 3,
        deadline_at: None,
        lease_expires_at: None,
        key_expires_at: Some("2026-11-07T10:00:00Z".into()),
        created_at: "2026-11-06T10:00:00Z".into(),
        updated_at: "2026-11-06T11:58:00Z".into(),
        attempts: Vec::new(),
        events: Vec::new(),
    }
}

fn attempt(n: i64, start: &str, end: &str, outcome: Outcome, error: Option<&str>) -> NewAttempt {
    NewAttempt {
        attempt: n,
        started_at: start.into(),
        ended_at: Some(end.into()),
        outcome,
        error: error.map(str::to_string),
        response: None,
    }
}

fn event(n: i64, at: &str, event: &str, detail: Option<&str>) -> NewEvent {
    NewEvent {
        attempt: Some(n),
        at: at.into(),
        event: event.into(),
        detail: detail.map(str::to_string),
    }
}

/// The fixture operations, oldest first (ids 1..=7; lists show 7 first).
pub fn fixture() -> Vec<NewOperation> {
    let mut ops = Vec::new();

    let mut completed = op("gamma", "create_report", "k-done", State::Completed);
    completed.result_id = Some("report-9".into());
    completed.updated_at = "2026-11-05T09:00:00Z".into();
    ops.push(completed);

    let mut live = op("gamma", "create_report", "k-live", State::Reserved);
    live.lease_expires_at = Some("2026-11-06T12:05:00Z".into());
    ops.push(live);

    let mut stale = op("beta", "create_report", "k-stale", State::Reserved);
    stale.lease_expires_at = Some("2026-11-06T11:00:00Z".into());
    stale.updated_at = "2026-11-06T10:30:00Z".into();
    ops.push(stale);

    let mut conflict = op("beta", "create_report", "k-conflict", State::Conflict);
    conflict.attempts = vec![attempt(
        1,
        "2026-11-06T10:00:00Z",
        "2026-11-06T10:00:01Z",
        Outcome::Conflict,
        Some("fingerprint mismatch"),
    )];
    conflict.events = vec![event(1, "2026-11-06T10:00:01Z", "rejected_mismatch", None)];
    ops.push(conflict);

    let mut exhausted = op("acme", "place_order", "k-order", State::Exhausted);
    exhausted.attempts = (1..=3)
        .map(|n| {
            let start = format!("2026-11-06T10:0{}:00Z", n * 2);
            let end = format!("2026-11-06T10:0{}:30Z", n * 2);
            attempt(n, &start, &end, Outcome::Timeout, Some("provider timeout"))
        })
        .collect();
    exhausted.events = vec![event(3, "2026-11-06T10:06:30Z", "budget_exhausted", None)];
    ops.push(exhausted);

    let mut evil = op(
        "evil\u{1b}[31m",
        "create_report",
        "k-\u{1b}]0;pwned\u{7}x",
        State::Unknown,
    );
    evil.params = Some("{\"note\":\"\\u001b[2Jclear\"}".into());
    ops.push(evil);

    let mut unknown = op("acme", "create_report", "k-report-1", State::Unknown);
    unknown.attempts = vec![attempt(
        1,
        "2026-11-06T10:00:00Z",
        "2026-11-06T10:00:30Z",
        Outcome::Timeout,
        Some("read timeout"),
    )];
    unknown.events = vec![
        event(1, "2026-11-06T10:00:00Z", "reserved", None),
        event(
            1,
            "2026-11-06T10:00:02Z",
            "committed",
            Some(r#"{"effect_id":"report-1"}"#),
        ),
        event(1, "2026-11-06T10:00:30Z", "timeout", None),
    ];
    ops.push(unknown);
    ops
}

pub fn contracts() -> Vec<OpTypeContract> {
    vec![
        OpTypeContract {
            op_type: "create_report".into(),
            idempotent: true,
            key_retention_s: None,
            description: Some("reports service".into()),
        },
        OpTypeContract {
            op_type: "place_order".into(),
            idempotent: false,
            key_retention_s: None,
            description: None,
        },
    ]
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with(&fixture())
    }

    pub fn with(ops: &[NewOperation]) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let mut ledger = Ledger::create(&path).unwrap();
        ledger.import(ops, &contracts()).unwrap();
        let mut app = App::new(
            "/srv/ledger.db".into(),
            "alice".into(),
            false,
            Keymap::default_keymap(),
            now(),
        );
        app.size = (100, 30);
        let mut h = Harness {
            app,
            ledger,
            _dir: dir,
        };
        h.act(Intent::ShowView(super::View::Queue));
        h
    }

    /// Applies `intent`, performs every effect against the ledger and
    /// feeds the results back; returns the effects the model asked for.
    pub fn act(&mut self, intent: Intent) -> Vec<Effect> {
        let effects = update(&mut self.app, intent);
        self.settle(effects)
    }

    /// Applies what the shell would report, then as [`Harness::act`].
    pub fn receive(&mut self, msg: Msg) -> Vec<Effect> {
        let effects = apply(&mut self.app, msg);
        self.settle(effects)
    }

    /// Performs one effect now and returns its answers, unapplied: a
    /// test holding effects back plays a worker answering late.
    pub fn perform(&mut self, effect: Effect) -> Vec<Msg> {
        perform(&mut self.ledger, self.app.now, effect)
    }

    /// Performs `effects` synchronously (counts included, as no worker
    /// runs here) and feeds the answers back until nothing is left; the
    /// effects held back by a test are answered late the same way.
    pub fn settle(&mut self, effects: Vec<Effect>) -> Vec<Effect> {
        let mut asked = Vec::new();
        let mut answers = std::collections::VecDeque::new();
        let mut pending = effects;
        loop {
            for effect in pending {
                asked.push(effect.clone());
                answers.extend(perform(&mut self.ledger, self.app.now, effect));
            }
            let Some(msg) = answers.pop_front() else {
                return asked;
            };
            pending = apply(&mut self.app, msg);
        }
    }

    /// Presses each space-separated key of `script` through the keymap.
    pub fn keys(&mut self, script: &str) -> Vec<Effect> {
        let mut effects = Vec::new();
        for token in script.split_whitespace() {
            let key = Key::parse(token).unwrap_or_else(|| panic!("no key {token:?}"));
            if let Some(intent) = self.app.keymap.resolve(self.app.mode.key_mode(), key) {
                effects.extend(self.act(intent));
            }
        }
        effects
    }

    /// Types `text` as printable keys (into the filter or a form field).
    pub fn type_text(&mut self, text: &str) -> Vec<Effect> {
        let mut effects = Vec::new();
        for c in text.chars() {
            let key = Key {
                name: crate::console::input::keymap::KeyName::Char(c),
                ctrl: false,
            };
            if let Some(intent) = self.app.keymap.resolve(self.app.mode.key_mode(), key) {
                effects.extend(self.act(intent));
            }
        }
        effects
    }

    pub fn selected_key(&self) -> String {
        self.app
            .current_list()
            .and_then(|l| l.window.selected())
            .map(|r| r.idem_key.clone())
            .unwrap_or_default()
    }
}

/// Two hand-made runs of the sample drill, written into `dir`: `before`
/// is the sample; in `after` stable_key duplicates (the sample's
/// naive_retry under its name), naive_retry is safe (the sample's
/// stable_key) and later_invocation is gone.
pub fn two_runs(dir: &std::path::Path) -> Vec<super::LoadedDrill> {
    let text = std::fs::read_to_string("sample-data/drill-results.json").unwrap();
    let before = dir.join("before.json");
    std::fs::write(&before, &text).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = value["cases"].as_array_mut().unwrap();
    cases.retain(|c| c["case"] != "later_invocation");
    for case in cases.iter_mut() {
        let renamed = match case["case"].as_str() {
            Some("naive_retry") => "stable_key",
            Some("stable_key") => "naive_retry",
            _ => continue,
        };
        case["case"] = renamed.into();
    }
    let after = dir.join("after.json");
    std::fs::write(&after, value.to_string()).unwrap();
    vec![loaded(&before), loaded(&after)]
}

/// A drill file loaded as `--drill` loads it (`effects::read_drill`).
pub fn loaded(path: &std::path::Path) -> super::LoadedDrill {
    crate::console::effects::read_drill(path)
}

/// One effect carried out synchronously, as the console's workers would
/// ([`crate::console::workers`], [`crate::console::counter`]), answering with their messages.
/// Lookups run child processes, which only the console's prober starts:
/// here a probe ends at once, unrun, so the model leaves its probing state.
fn perform(ledger: &mut Ledger, now: DateTime<Utc>, effect: Effect) -> Vec<Msg> {
    use crate::app::effect::{Count, Write};
    use crate::console::effects::{clusters, count, first_line, read, record, record_bulk};
    match effect {
        Effect::Read(r) => read(ledger, now, r),
        Effect::Write(Write::Decisions(drafts)) => vec![record(ledger, now, &drafts)],
        Effect::Write(Write::Bulk { template, targets }) => {
            let mut msgs = Vec::new();
            record_bulk(ledger, now, &template, &targets, |m| {
                msgs.push(m);
                true
            });
            msgs
        }
        Effect::Count(Count::Lists(lists)) => {
            vec![count(ledger, &lists, now).unwrap_or_else(|e| Msg::LoadFailed(first_line(&e)))]
        }
        Effect::Count(Count::Clusters { query, top }) => vec![clusters(ledger, &query, top, now)],
        Effect::Count(Count::StopGrouping) => Vec::new(),
        Effect::Probe(_) => vec![Msg::Probe(crate::app::probe::ProbeNews::Finished {
            stopped: Some("internal: probes run on the console's prober".to_string()),
        })],
        Effect::Drill(_) | Effect::CancelDrill => Vec::new(),
    }
}
