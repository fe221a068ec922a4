//! The runner against real child processes: small shell scripts written to
//! a temp folder play the receiver.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::domain::OperationId;

struct Kit {
    dir: tempfile::TempDir,
}

impl Kit {
    fn new() -> Kit {
        Kit {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A `sh` script named `name` whose body is `body`. Receivers run it as
    /// `/bin/sh SCRIPT`: exec'ing a file this process just wrote can fail
    /// with ETXTBSY while a parallel test forks.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        path
    }

    /// Receivers running `body` for every op type, lookup and retry alike.
    fn receivers(&self, body: &str, timeout_s: f64) -> Receivers {
        let s = self.script("receiver", body);
        let text = format!(
            "[receivers.\"*\"]\nlookup = [\"/bin/sh\", {s:?}, \"lookup\"]\nretry = [\"/bin/sh\", {s:?}, \"retry\"]\ntimeout_s = {timeout_s}\n",
            s = s.display().to_string()
        );
        Receivers::parse(&self.dir.path().join("receivers.toml"), &text).unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn subject(key: &str) -> Subject {
    Subject {
        op_id: OperationId(7),
        account: "acme".into(),
        op_type: "place_order".into(),
        key: key.into(),
        fingerprint: "sha256:ab".into(),
        params: Some(r#"{"sku":"x","qty":2}"#.into()),
    }
}

fn found(l: &Lookup) -> &str {
    match &l.outcome {
        LookupOutcome::Found { result_id } => result_id,
        other => panic!("expected found, got {other:?}"),
    }
}

fn unknown(l: &Lookup) -> &str {
    match &l.outcome {
        LookupOutcome::Unknown { why } => why,
        other => panic!("expected unknown, got {other:?}"),
    }
}

#[test]
fn exit_0_with_an_id_is_found_and_the_operation_is_in_the_environment() {
    let kit = Kit::new();
    let r = kit.receivers(
        r#"echo "$1:$SETTLE_OP_ID:$SETTLE_ACCOUNT:$SETTLE_OP_TYPE:$SETTLE_KEY:$SETTLE_FINGERPRINT:$SETTLE_PARAMS:${SETTLE_ATTEMPT-none}"; echo second line"#,
        10.0,
    );
    let l = lookup(&r, &subject("k-1"));
    assert_eq!(
        found(&l),
        r#"lookup:7:acme:place_order:k-1:sha256:ab:{"sku":"x","qty":2}:none"#
    );
    let ran = l.ran.unwrap();
    assert_eq!(ran.exit, Exit::Code(0));
    assert!(ran.command.ends_with("/receiver lookup"), "{}", ran.command);
    let t = retry(&r, &subject("k-1"), 2);
    assert_eq!(
        t.outcome,
        RetryOutcome::Completed {
            result_id: r#"retry:7:acme:place_order:k-1:sha256:ab:{"sku":"x","qty":2}:2"#.into()
        }
    );
}

#[test]
fn exit_3_is_not_found_for_a_lookup_and_refused_for_a_retry() {
    let kit = Kit::new();
    let r = kit.receivers("echo 'no such key' >&2; exit 3", 10.0);
    assert_eq!(lookup(&r, &subject("k")).outcome, LookupOutcome::NotFound);
    assert_eq!(retry(&r, &subject("k"), 1).outcome, RetryOutcome::Refused);
}

#[test]
fn another_exit_is_unknown_and_says_what_the_receiver_said() {
    let kit = Kit::new();
    let r = kit.receivers("echo 'connection refused' >&2; echo >&2; exit 1", 10.0);
    let l = lookup(&r, &subject("k"));
    assert_eq!(unknown(&l), "exit 1: connection refused");
    match retry(&r, &subject("k"), 1).outcome {
        RetryOutcome::Failed { why } => assert_eq!(why, "exit 1: connection refused"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn exit_0_without_an_id_is_unknown_not_found() {
    let kit = Kit::new();
    let r = kit.receivers("echo; echo eff-1", 10.0);
    let l = lookup(&r, &subject("k"));
    assert!(unknown(&l).contains("no result id"), "{:?}", l.outcome);
    let long = kit.receivers("head -c 300 /dev/zero | tr '\\0' x", 10.0);
    let l = lookup(&long, &subject("k"));
    assert!(unknown(&l).contains("300 bytes long"), "{:?}", l.outcome);
}

/// The state letter of a live process, `None` once it is gone or a zombie
/// (killed, waiting only for its parent to collect the status).
fn alive(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat.rsplit(')').next()?.trim_start().chars().next()?;
    (state != 'Z' && state != 'X').then_some(state)
}

/// [`alive`] once the process had a few seconds to finish dying: a killed
/// process closes its pipes (which ends the run) a moment before the
/// kernel marks it a zombie. A process never killed stays alive throughout.
fn alive_after_a_while(pid: &str) -> Option<char> {
    for _ in 0..100 {
        alive(pid)?;
        std::thread::sleep(Duration::from_millis(50));
    }
    alive(pid)
}

#[test]
fn a_hanging_lookup_is_killed_with_what_it_started_and_reads_unknown() {
    let kit = Kit::new();
    let pids = kit.path("pids");
    let body = format!(
        "sleep 1000 & echo $$ $! > {p}.tmp; mv {p}.tmp {p}; wait",
        p = pids.display()
    );
    // The script writes its pids before it hangs; on a loaded machine the
    // kill may come first, so try again with more time until it has.
    for timeout_s in [0.5, 2.0, 8.0, 30.0] {
        let l = lookup(&kit.receivers(&body, timeout_s), &subject("k"));
        assert!(
            unknown(&l).starts_with("timed out after"),
            "{:?}",
            l.outcome
        );
        assert!(matches!(l.ran.unwrap().exit, Exit::TimedOut(_)));
        let Ok(line) = std::fs::read_to_string(&pids) else {
            continue;
        };
        let (script, sleeper) = line.trim().split_once(' ').unwrap();
        assert_eq!(alive(script), None, "the script itself is reaped");
        assert_eq!(
            alive_after_a_while(sleeper),
            None,
            "what it started is gone too"
        );
        return;
    }
    panic!("the script never got to write its pids");
}

#[test]
fn huge_output_is_cut_and_never_blocks_the_child() {
    let kit = Kit::new();
    let r = kit.receivers(
        "echo eff-9; head -c 5000000 /dev/zero; head -c 5000000 /dev/zero >&2",
        60.0,
    );
    let l = lookup(&r, &subject("k"));
    assert_eq!(found(&l), "eff-9");
    let ran = l.ran.unwrap();
    assert_eq!(ran.stdout.text.len(), OUTPUT_CAP);
    assert!(ran.stdout.cut && ran.stderr.cut);
    assert_eq!(ran.stderr.text.len(), OUTPUT_CAP);
}

#[test]
fn escape_sequences_in_output_are_defused() {
    let kit = Kit::new();
    let r = kit.receivers(r"printf 'eff\033[2J-1\n'", 10.0);
    let id = lookup(&r, &subject("k")).outcome;
    assert_eq!(
        id,
        LookupOutcome::Found {
            result_id: "eff␛[2J-1".into()
        }
    );
    let r = kit.receivers(r"printf 'bad\033]0;pwned\007 news\n' >&2; exit 9", 10.0);
    let l = lookup(&r, &subject("k"));
    let why = unknown(&l);
    assert!(!why.chars().any(char::is_control), "{why:?}");
    assert!(why.contains("exit 9: bad␛]0;pwned␇ news"), "{why:?}");
}

#[test]
fn a_missing_program_is_unknown_with_a_reason() {
    let text = "[receivers.\"*\"]\nlookup = [\"/nonexistent/receiver\", \"lookup\"]\n";
    let r = Receivers::parse(Path::new("r.toml"), text).unwrap();
    let l = lookup(&r, &subject("k"));
    assert_eq!(
        unknown(&l),
        "could not start: /nonexistent/receiver: no such program (give a full path, or put it on PATH)"
    );
}

#[test]
fn no_configured_lookup_is_unknown_and_runs_nothing() {
    let l = lookup(&Receivers::none(), &subject("k"));
    assert!(unknown(&l).contains("--receivers"), "{:?}", l.outcome);
    assert_eq!(l.ran, None);
    let r = Receivers::parse(Path::new("r.toml"), "[receivers.other]\nretry = [\"x\"]\n").unwrap();
    assert!(unknown(&lookup(&r, &subject("k"))).contains("no lookup for op type place_order"));
    match retry(&r, &subject("k"), 1).outcome {
        RetryOutcome::Failed { why } => assert!(why.contains("no retry for op type"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lookup_all_reports_every_subject_once() {
    let kit = Kit::new();
    let mut r = kit.receivers(r#"echo "eff-$SETTLE_KEY""#, 10.0);
    r.concurrency = 3;
    let subjects: Vec<Subject> = (0..10).map(|i| subject(&format!("k{i}"))).collect();
    let mut seen = Vec::new();
    lookup_all(&r, &subjects, |i, l| {
        assert_eq!(found(&l), format!("eff-{}", subjects[i].key));
        seen.push(i);
        ControlFlow::Continue(())
    });
    seen.sort();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
}

#[test]
fn lookup_all_starts_nothing_new_once_told_to_stop() {
    let kit = Kit::new();
    // Only the first answers at once; one started before the stop arrived
    // hangs until its timeout, long after the stop is set.
    let mut r = kit.receivers(
        r#"[ "$SETTLE_KEY" = k0 ] || sleep 1000; echo "eff-$SETTLE_KEY""#,
        1.0,
    );
    r.concurrency = 1;
    let subjects: Vec<Subject> = (0..20).map(|i| subject(&format!("k{i}"))).collect();
    let mut seen = 0;
    lookup_all(&r, &subjects, |_, _| {
        seen += 1;
        ControlFlow::Break(())
    });
    // One worker: the first result, and at most the one it had started
    // while the stop was on its way.
    assert!((1..=2).contains(&seen), "{seen}");
}

#[test]
fn an_exit_reads_as_what_happened() {
    assert_eq!(
        Exit::TimedOut(Duration::from_millis(500)).to_string(),
        "timed out after 0.5 s (killed)"
    );
    assert_eq!(
        Exit::TimedOut(Duration::from_secs(10)).to_string(),
        "timed out after 10 s (killed)"
    );
    assert_eq!(Exit::Code(3).to_string(), "exit 3");
    assert_eq!(Exit::Signal(9).to_string(), "killed by signal 9");
}

#[test]
fn hostile_keys_and_accounts_reach_the_command_as_data_never_as_flags_or_shell_words() {
    let kit = Kit::new();
    let out = kit.path("seen");
    std::fs::create_dir(&out).unwrap();
    let r = kit.receivers(
        &format!(
            r#"printf '%s\n' "$#" "$@" > {o}/argv-$1; printf '%s' "$SETTLE_KEY" > {o}/key-$1; printf '%s' "$SETTLE_ACCOUNT" > {o}/account-$1; echo id-1"#,
            o = out.display()
        ),
        10.0,
    );
    let pwned = kit.path("pwned");
    let key = format!(
        "--help; touch {p} $(touch {p}) `touch {p}`\n-rf *",
        p = pwned.display()
    );
    let mut hostile = subject(&key);
    hostile.account = format!("-x'\"; touch {}\n", pwned.display());
    assert_eq!(found(&lookup(&r, &hostile)), "id-1");
    assert_eq!(
        retry(&r, &hostile, 1).outcome,
        RetryOutcome::Completed {
            result_id: "id-1".into()
        }
    );
    for action in ["lookup", "retry"] {
        let read =
            |what: &str| std::fs::read_to_string(out.join(format!("{what}-{action}"))).unwrap();
        // Only the file's own argument, whatever the operation holds.
        assert_eq!(read("argv"), format!("1\n{action}\n"));
        assert_eq!(read("key"), key);
        assert_eq!(read("account"), hostile.account);
    }
    assert!(!pwned.exists(), "a shell word of the key ran");
}
