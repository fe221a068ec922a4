//! Progress of long CLI work (adopt, a bulk decision, probing many rows):
//! on a terminal, one bar on stderr with the rate and the time left;
//! piped, the lines scripts and logs read today, one per step, unchanged.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::Result;
use crate::store::{Access, Ledger, OpenReport};

/// A count of steps towards a known total.
pub struct Steps {
    bar: Option<ProgressBar>,
}

impl Steps {
    /// Steps of `what` (`adopting`, `deciding`…) out of `total`; a bar only
    /// when stderr is a terminal.
    pub fn new(what: &str, total: u64) -> Steps {
        Steps::drawn(what, total, std::io::stderr().is_terminal())
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
            return Steps { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("settle: {prefix} {msg}: {pos} rows, {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        Steps { bar: Some(bar) }
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
            return Steps { bar: None };
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
        Steps { bar: Some(bar) }
    }

    /// `done` of the total are done, `now` says what (the bar's message);
    /// piped, `line` is printed on stderr as it always was.
    pub fn at(&self, done: u64, now: &str, line: impl FnOnce() -> String) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(crate::text::sanitize(now).into_owned());
            }
            None => eprintln!("{}", line()),
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
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
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
