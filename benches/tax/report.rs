//! What the tax bench's measurements share: the settle binary measured,
//! and how a figure is put (a median, a ratio, the commits' line).

use std::path::PathBuf;
use std::time::Duration;

use crate::pg_service;

/// The release `settle` the benchmark drives.
pub(crate) fn settle_bin() -> PathBuf {
    std::env::var_os("SETTLE_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_settle").into())
}

/// The median of `v`; zero when empty.
pub(crate) fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The table line of a service's commits while `settle adopt` ran for
/// `took` (`seen`), with those of the same service as long again alone
/// (`alone`) beside them.
pub(crate) fn waits_line(
    what: &str,
    took: Duration,
    seen: &pg_service::Commits,
    alone: &pg_service::Commits,
) -> String {
    format!(
        "| {what}: a commit every 10 ms while `settle adopt` ran ({:.1} s) | {} (alone, as long after) | {} | |",
        took.as_secs_f64(),
        alone.line(),
        seen.line()
    )
}

/// `after / before`, as "1.07x".
pub(crate) fn ratio(after: f64, before: f64) -> String {
    if before > 0.0 {
        format!("{:.2}x", after / before)
    } else {
        "n/a".into()
    }
}
