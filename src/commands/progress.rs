//! Progress of long CLI work (adopt, a bulk decision, probing many rows):
//! on a terminal, one bar on stderr with the rate and the time left;
//! piped, the lines scripts and logs read, paced: a line at most every
//! [`LOG_EVERY`] or each tenth of the work, and the last, so a log of an
//! adoption with millions of ids holds a few dozen lines, not thousands.

use std::cell::Cell;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::Result;
use crate::store::{Access, Ledger, OpenReport};

/// The longest a log waits for a progress line while work goes on.
pub const LOG_EVERY: Duration = Duration::from_secs(5);

/// A count of steps towards a known total.
pub struct Steps {
    bar: Option<ProgressBar>,
    /// Piped: which lines to print; `None` prints every step.
    pace: Option<Pace>,
}

/// When a piped line is due: the first, one each tenth of `total` or
/// [`LOG_EVERY`] after the last printed, whichever comes first, and the
/// last.
struct Pace {
    total: u64,
    printed: Cell<Option<(Instant, u64)>>,
    /// The newest line not printed, for the end: a log shows the last.
    pending: Cell<Option<String>>,
}

impl Pace {
    fn new(total: u64) -> Pace {
        Pace {
            total,
            printed: Cell::new(None),
            pending: Cell::new(None),
        }
    }

    /// Whether the line for `done` is printed at `now`; remembers it if so.
    fn due(&self, done: u64, now: Instant) -> bool {
        let tenth = |n: u64| n.saturating_mul(10) / self.total.max(1);
        let due = match self.printed.get() {
            None => true,
            Some((at, last)) => {
                done >= self.total
                    || tenth(done) > tenth(last)
                    || now.duration_since(at) >= LOG_EVERY
            }
        };
        if due {
            self.printed.set(Some((now, done)));
        }
        due
    }
}

impl Steps {
    /// Steps of `what` (`adopting`, `deciding`…) out of `total`; a bar only
    /// when stderr is a terminal.
    pub fn new(what: &str, total: u64) -> Steps {
        Steps::drawn(what, total, std::io::stderr().is_terminal())
    }

    /// [`Steps::new`] that prints every step when piped: a few long steps
    /// (a drill's cases), each worth its line.
    pub fn every(what: &str, total: u64) -> Steps {
        let mut steps = Steps::new(what, total);
        steps.pace = None;
        steps
    }

    /// [`Steps::new`] when `long`; else no bar at all (a probe of the few
    /// operations named on the command line is over before one would help).
    pub fn when(long: bool, what: &str, total: u64) -> Steps {
        Steps::drawn(what, total, long && std::io::stderr().is_terminal())
    }

    /// A count of `what` (`copying`…) without a known total: on a terminal,
    /// a spinner with the count so far and the rate; piped, nothing (the
    /// command prints its own summary).
    pub fn counting(what: &str) -> Steps {
        if !std::io::stderr().is_terminal() {
            return Steps {
                bar: None,
                pace: None,
            };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("settle: {prefix} {msg}: {pos} rows, {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        Steps {
            bar: Some(bar),
            pace: None,
        }
    }

    /// Sets the count and what it counts; nothing when piped.
    pub fn set(&self, done: u64, now: &str) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            bar.set_message(crate::text::sanitize(now).into_owned());
        }
    }

    fn drawn(what: &str, total: u64, terminal: bool) -> Steps {
        if !terminal {
            return Steps {
                bar: None,
                pace: Some(Pace::new(total)),
            };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "settle: {prefix} [{bar:30}] {pos}/{len} {msg}  {rate}, {eta} left",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0}/s", state.per_sec());
            },
        )
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        Steps {
            bar: Some(bar),
            pace: None,
        }
    }

    /// `done` of the total are done, `now` says what (the bar's message);
    /// piped, `line` is printed on stderr when it is due.
    pub fn at(&self, done: u64, now: &str, line: impl FnOnce() -> String) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(crate::text::sanitize(now).into_owned());
            }
            None => match &self.pace {
                Some(pace) if !pace.due(done, Instant::now()) => pace.pending.set(Some(line())),
                Some(pace) => {
                    pace.pending.set(None);
                    eprintln!("{}", line());
                }
                None => eprintln!("{}", line()),
            },
        }
    }

    /// Runs `print` (stdout lines between steps) with the bar out of the
    /// way, so neither garbles the other on one terminal.
    pub fn suspend<T>(&self, print: impl FnOnce() -> T) -> T {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// One more step done, saying nothing when piped.
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Replaces the bar with one line saying how much was done, how fast
    /// and in how long, so the output that follows starts on a line of
    /// its own.
    pub fn finish(&self) {
        self.print_pending();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            eprintln!(
                "settle: {} {}/{} {} in {:.1}s, {:.0}/s",
                bar.prefix(),
                bar.position(),
                bar.length().unwrap_or_default(),
                bar.message(),
                bar.elapsed().as_secs_f64(),
                bar.per_sec()
            );
        }
    }
}

impl Steps {
    /// Removes the bar, saying nothing: the command's own lines follow.
    pub fn clear(&self) {
        self.print_pending();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Piped: the last step's line, if pacing held it back.
    fn print_pending(&self) {
        if let Some(line) = self.pace.as_ref().and_then(|p| p.pending.take()) {
            eprintln!("{line}");
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        // An error ends the work early: the bar stops where it was.
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            bar.abandon();
        }
    }
}

/// Opens the ledger at `path` to write, with the steps of an adoption or a
/// read model's build on stderr under `what` (a bar on a terminal, else a
/// line per step): building a big ledger's takes a while.
pub fn open_writable(what: &str, path: &Path) -> Result<(Ledger, OpenReport)> {
    let mut steps: Option<Steps> = None;
    let opened = Ledger::open_with_progress(path, Access::ReadWrite, &mut |p| {
        let steps = steps.get_or_insert_with(|| Steps::new(what, p.total as u64));
        steps.at(p.done as u64, &p.step.to_string(), || {
            format!("settle: {what}: {} ({}/{})", p.step, p.done, p.total)
        });
    })?;
    if let Some(steps) = &steps {
        steps.finish();
    }
    Ok(opened)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_steps_print_the_line_and_draw_no_bar() {
        let steps = Steps::drawn("adopting", 3, false);
        let mut printed = false;
        steps.at(1, "indexes", || {
            printed = true;
            "settle: adopting: indexes (1/3)".to_string()
        });
        assert!(printed && steps.bar.is_none());
    }

    #[test]
    fn a_log_gets_a_line_each_tenth_or_every_five_seconds_and_the_last() {
        let pace = Pace::new(100_000);
        let t0 = Instant::now();
        let printed = (0..=100_000u64)
            .step_by(10)
            .filter(|&done| pace.due(done, t0))
            .count();
        // The first, one a tenth, and the last (which is the tenth tenth).
        assert_eq!(printed, 11);

        let pace = Pace::new(1_000_000);
        assert!(pace.due(0, t0));
        assert!(!pace.due(1, t0 + Duration::from_secs(4)));
        assert!(pace.due(2, t0 + LOG_EVERY));
        assert!(!pace.due(3, t0 + LOG_EVERY + Duration::from_secs(1)));
        assert!(pace.due(1_000_000, t0 + LOG_EVERY + Duration::from_secs(2)));
    }

    #[test]
    fn on_a_terminal_the_bar_counts_and_says_the_rate_and_time_left() {
        let steps = Steps::drawn("deciding", 10, true);
        steps.at(4, "batch 1 of 3", || unreachable!("no line on a terminal"));
        steps.inc();
        let bar = steps.bar.as_ref().unwrap();
        assert_eq!(bar.position(), 5);
        assert_eq!(bar.length(), Some(10));
        steps.finish();
        assert!(bar.is_finished());
    }
}
