//! Property: whatever text a service writes into any ledger field, or an
//! operator types, no control, escape or bidi-override character reaches a
//! rendered frame: ledger text is written by services, so an escape
//! sequence in it must never reach the operator's terminal. The renderer's
//! sanitising is what is tested.

use proptest::prelude::*;

use crate::app::testkit::{Harness, now};
use crate::domain::{
    DecisionDraft, DecisionKind, NewAttempt, NewEvent, NewOperation, OperationId, Outcome, State,
};

/// What must never be drawn: C0, DEL, C1 (ESC and CSI among them), and the
/// marks and overrides that reorder what a reader sees.
fn forbidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Text a hostile or careless service might write: mostly the characters
/// that do harm, with letters between so sequences are well-formed.
fn hostile() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        3 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => proptest::char::range('\u{7f}', '\u{9f}'),
        2 => proptest::sample::select(vec![
            '\u{1b}', '[', ']', ';', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}',
            '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ]),
        1 => any::<char>(),
    ];
    proptest::collection::vec(c, 0..14).prop_map(String::from_iter)
}

#[derive(Debug, Clone)]
struct Fields {
    account: String,
    op_type: String,
    key: String,
    params: String,
    fingerprint: String,
    time: String,
    error: String,
    response: String,
    event: String,
    detail: String,
    evidence: String,
    note: String,
    operator: String,
    result_id: String,
    typed: String,
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        (hostile(), hostile(), hostile(), hostile(), hostile()),
        (hostile(), hostile(), hostile(), hostile(), hostile()),
        (hostile(), hostile(), hostile(), hostile(), hostile()),
    )
        .prop_map(|(a, b, c)| Fields {
            account: a.0,
            op_type: a.1,
            key: a.2,
            params: a.3,
            fingerprint: a.4,
            time: b.0,
            error: b.1,
            response: b.2,
            event: b.3,
            detail: b.4,
            evidence: c.0,
            note: c.1,
            operator: c.2,
            result_id: c.3,
            typed: c.4,
        })
}

fn operation(f: &Fields) -> NewOperation {
    NewOperation {
        account: f.account.clone(),
        op_type: f.op_type.clone(),
        idem_key: f.key.clone(),
        fingerprint: f.fingerprint.clone(),
        params: Some(f.params.clone()),
        state: State::Unknown,
        result_id: None,
        max_attempts: 3,
        deadline_at: Some(f.time.clone()),
        lease_expires_at: None,
        key_expires_at: Some(f.time.clone()),
        created_at: "2026-11-06T10:00:00Z".into(),
        updated_at: f.time.clone(),
        attempts: vec![NewAttempt {
            attempt: 1,
            started_at: f.time.clone(),
            ended_at: Some(f.time.clone()),
            outcome: Outcome::parse(&f.event),
            error: Some(f.error.clone()),
            response: Some(f.response.clone()),
        }],
        events: vec![
            NewEvent {
                attempt: Some(1),
                at: f.time.clone(),
                event: f.event.clone(),
                detail: Some(f.detail.clone()),
            },
            NewEvent {
                attempt: Some(1),
                at: f.time.clone(),
                event: "committed".into(),
                // Effect ids are shown by the rules and the evidence summary.
                detail: Some(serde_json::json!({ "effect_id": f.result_id }).to_string()),
            },
        ],
    }
}

/// Every character of the frame that must not be there, with its cell.
fn leaks(h: &Harness, screen: &str) -> Vec<String> {
    let (width, height) = h.app.size;
    let frame = super::draw(&h.app, width, height);
    frame
        .lines()
        .enumerate()
        .flat_map(|(y, line)| {
            line.chars()
                .filter(|c| forbidden(*c))
                .map(move |c| format!("{screen}: row {y}: U+{:04X} in {line:?}", c as u32))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_ledger_field_puts_a_control_into_a_frame(f in fields()) {
        let mut h = Harness::with(&[operation(&f)]);
        let mut found = leaks(&h, "queue");
        h.keys("enter");
        found.extend(leaks(&h, "detail"));
        h.keys("/");
        h.type_text(&f.typed);
        found.extend(leaks(&h, "filter"));
        h.keys("esc esc a");
        h.type_text(&f.typed);
        found.extend(leaks(&h, "form"));
        h.keys("esc");

        let draft = DecisionDraft {
            op_id: OperationId(1),
            kind: DecisionKind::Applied,
            result_id: Some(format!("r{}", f.result_id)),
            evidence: Some(format!("e{}", f.evidence)),
            note: Some(f.note.clone()),
            override_committed: false,
            operator: format!("o{}", f.operator),
            expected_version: 0,
            undoes: None,
        };
        h.ledger.record_decision(&draft, now()).unwrap();
        h.keys("ctrl-r 2 enter");
        found.extend(leaks(&h, "all, detail with a decision"));
        h.keys("4");
        found.extend(leaks(&h, "audit"));
        h.keys("enter");
        found.extend(leaks(&h, "audit detail"));
        prop_assert!(found.is_empty(), "{:#?}", found);
    }
}
