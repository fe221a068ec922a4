//! Property: no filter an operator can type panics the parser, and every
//! filter it accepts runs as parameterised SQL against a real ledger
//! without an SQL error and without matching what it must not: a filter is
//! typed by a person under pressure, and no filter may inject SQL.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use settle::domain::{NewOperation, State, parse_time};
use settle::query::Query;
use settle::store::Ledger;

fn now() -> DateTime<Utc> {
    parse_time("2026-11-06T12:00:00Z").unwrap()
}

/// Filters built from the language's own pieces, glued in any order, so
/// qualifiers, comparisons, quotes and wildcards meet each other and SQL
/// metacharacters far more often than uniformly random text would.
fn filter() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "state:",
            "account:",
            "type:",
            "key:",
            "err:",
            "attempts",
            ">",
            ">=",
            "<",
            "<=",
            "=",
            "==",
            ":",
            ",",
            "*",
            "\"",
            " ",
            "  ",
            "unknown",
            "exhausted",
            "reserved",
            "-1",
            "0",
            "99999999999999999999",
            "'",
            "';--",
            "%",
            "_",
            "\\",
            "OR 1=1",
            ")",
            "(",
            "\u{0}",
            "\u{1b}[2J",
            "\u{202E}",
            "é",
            "日本",
        ])
        .prop_map(str::to_string),
        ".{0,6}",
    ];
    proptest::collection::vec(piece, 0..10).prop_map(|p| p.concat())
}

fn operation(account: &str) -> NewOperation {
    NewOperation::builder(account, "create_report", "k-1")
        .fingerprint("sha256:ab")
        .state(State::Unknown)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics_the_parser(s in any::<String>()) {
        let _ = Query::parse(&s);
    }

    #[test]
    fn accepted_filters_run_as_sql(s in filter()) {
        // A ledger per case would dominate the run; it is only read here,
        // so one per test thread is enough.
        thread_local! {
            static LEDGER: (tempfile::TempDir, Ledger) = {
                let dir = tempfile::tempdir().unwrap();
                let mut ledger = Ledger::create(&dir.path().join("ledger.db")).unwrap();
                ledger.import(&[operation("acme"), operation("beta")], &[]).unwrap();
                (dir, ledger)
            };
        }
        if let Ok(query) = Query::parse(&s) {
            let count = |q: &Query| LEDGER.with(|(_, ledger)| ledger.count(q, now()));
            let counted = count(&query);
            prop_assert!(counted.is_ok(), "{s:?} -> {query:?}: {counted:?}");
            prop_assert!(counted.unwrap() <= 2);
            // Terms are ANDed: whatever the filter says, adding a key no
            // row has must match nothing. SQL spliced from the filter text
            // (an `OR 1=1`, a `'--`) would break this or fail to run.
            let nothing = query.clone().and(Query::parse("key:no-such-key").unwrap());
            prop_assert_eq!(count(&nothing).ok(), Some(0), "{:?} -> {:?}", s, nothing);
        }
    }
}
