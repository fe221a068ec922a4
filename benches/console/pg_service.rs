//! A service's commits on PostgreSQL while settle works on its database:
//! one client reserving an operation every 10 ms, each insert its own
//! transaction, as the service's first step writes it: leased for a day,
//! so none joins the queue (a reservation without a lease is stale) and
//! the figures after it still find the rows they expect. Shared by the
//! console benchmark (at 10M, beside its whole passes) and the tax
//! benchmark, whose SQLite service commits through the same loop
//! ([`service_during`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What the service saw while `work` ran: each commit's wait, and how many
/// failed; `slow`, when each commit over 100 ms began, from the start of
/// `work`, to tell which of its steps made the service wait.
pub struct Commits {
    pub waits: Vec<Duration>,
    pub failed: u64,
    pub slow: Vec<Duration>,
}

impl Commits {
    /// "slowest 61 ms; 0 of 352 over 100 ms; 0 failed".
    pub fn line(&self) -> String {
        let slowest = self.waits.iter().max().copied().unwrap_or_default();
        let over = self
            .waits
            .iter()
            .filter(|w| **w > Duration::from_millis(100))
            .count();
        let mut line = format!(
            "slowest {:.0} ms; {over} of {} over 100 ms; {} failed",
            slowest.as_secs_f64() * 1000.0,
            self.waits.len(),
            self.failed
        );
        if !self.slow.is_empty() {
            let at: Vec<String> = self
                .slow
                .iter()
                .take(20)
                .map(|d| format!("{:.0}", d.as_secs_f64()))
                .collect();
            line += &format!(" (began at {} s)", at.join(", "));
        }
        line
    }
}

/// Runs `work` while one client on `address` commits an operation every
/// 10 ms (from half a second before to half a second after).
pub fn commits_during<R>(address: &str, work: impl FnOnce() -> R) -> Result<(R, Commits), String> {
    let address = address.to_string();
    service_during(
        move || postgres::Client::connect(&address, postgres::NoTls).map_err(|e| e.to_string()),
        |c: &mut postgres::Client, key: &str| {
            c.execute(
                "INSERT INTO operations (account, op_type, idem_key, fingerprint, state,
                    max_attempts, lease_expires_at, created_at, updated_at, version)
                 VALUES ('svc', 'place_order', $1, 'sha256:00', 'reserved', 3,
                    now() + interval '1 day', now(), now(), 1)",
                &[&key],
            )
            .map(drop)
            .map_err(|e| e.to_string())
        },
        work,
    )
}

/// Runs `work` while a service, on the connection `connect` opens,
/// commits one operation every 10 ms with `commit` (its own key each,
/// new to the ledger), from half a second before to half a second after.
pub fn service_during<C, R>(
    connect: impl FnOnce() -> Result<C, String> + Send + 'static,
    commit: impl Fn(&mut C, &str) -> Result<(), String> + Send + 'static,
    work: impl FnOnce() -> R,
) -> Result<(R, Commits), String> {
    let stop = Arc::new(AtomicBool::new(false));
    // The service's own unique key: each run's operations are new ones.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || -> Result<Commits, String> {
            let mut c = connect()?;
            let mut seen = Commits {
                waits: Vec::new(),
                failed: 0,
                slow: Vec::new(),
            };
            let began = Instant::now() + Duration::from_millis(500);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                match commit(&mut c, &format!("during-{run}-{i}")) {
                    Ok(()) => {
                        let wait = start.elapsed();
                        if wait > Duration::from_millis(100) {
                            // Printed as it happens, among the progress
                            // lines of the work it waited on.
                            eprintln!("  (a service commit waited {} ms)", wait.as_millis());
                            seen.slow.push(start.saturating_duration_since(began));
                        }
                        seen.waits.push(wait);
                    }
                    Err(_) => seen.failed += 1,
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(seen)
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let result = work();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let seen = writer
        .join()
        .map_err(|_| "the service thread panicked".to_string())??;
    Ok((result, seen))
}
