//! The queue's size over the last hour, kept while the console runs: each
//! count the header receives is a sample, so "is it still growing?" is a
//! glance at the header. Pure: the time comes with each sample.

use std::collections::VecDeque;

use chrono::{DateTime, Duration, Utc};

/// How far back the header looks.
const WINDOW_SECONDS: i64 = 3_600;
/// Samples kept at most, whatever the refresh rate: one every 5 seconds
/// over the hour.
const MAX_SAMPLES: usize = 720;

/// The queue's size when it was counted, oldest first, within the last
/// hour and at most [`MAX_SAMPLES`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueHistory {
    samples: VecDeque<(DateTime<Utc>, i64)>,
}

impl QueueHistory {
    /// Keeps `size` counted at `at`, forgetting the oldest past
    /// [`MAX_SAMPLES`] and what is older than the hour before it, but for
    /// the last count before the hour: the size held from then on.
    pub fn record(&mut self, at: DateTime<Utc>, size: i64) {
        self.samples.push_back((at, size));
        let since = at - Duration::seconds(WINDOW_SECONDS);
        while self.samples.len() > MAX_SAMPLES
            || self.samples.get(1).is_some_and(|(t, _)| *t < since)
        {
            self.samples.pop_front();
        }
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// How long before `now` the size has been known: since the oldest
    /// count kept.
    pub fn known_for(&self, now: DateTime<Utc>) -> Duration {
        self.samples
            .front()
            .map_or(Duration::zero(), |(first, _)| now - *first)
    }

    /// The hour up to `now` in `buckets` equal slices, oldest first: the
    /// last size counted in each or, where none was, the size last counted
    /// before it (it held until the next count); `None` before the first.
    pub fn buckets(&self, now: DateTime<Utc>, buckets: usize) -> Vec<Option<u64>> {
        let mut out = vec![None; buckets];
        let Ok(n) = i64::try_from(buckets) else {
            return out;
        };
        if n == 0 {
            return out;
        }
        let start = now - Duration::seconds(WINDOW_SECONDS);
        // The size counted last before the hour holds at its start.
        let mut held = None;
        for (at, size) in &self.samples {
            let offset = (*at - start).num_seconds();
            if offset < 0 {
                held = Some(u64::try_from(*size).unwrap_or(0));
            }
            if !(0..=WINDOW_SECONDS).contains(&offset) {
                continue;
            }
            let i = (offset * n / WINDOW_SECONDS).min(n - 1);
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
                *slot = Some(u64::try_from(*size).unwrap_or(0));
            }
        }
        for slot in &mut out {
            match slot {
                Some(size) => held = Some(*size),
                None => *slot = held,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn keeps_the_last_hour_only() {
        let mut h = QueueHistory::default();
        for minute in 0..90 {
            h.record(at(minute * 60), minute);
        }
        // Minutes 29..=89: an hour back from minute 89, both ends kept,
        // and minute 28's count, the size held when the hour starts.
        assert_eq!(h.len(), 62);
        assert_eq!(h.samples.front().map(|s| s.1), Some(28));
    }

    #[test]
    fn keeps_at_most_the_bound_however_fast_it_is_fed() {
        let mut h = QueueHistory::default();
        for second in 0..2_000 {
            h.record(at(second), 1);
        }
        assert_eq!(h.len(), MAX_SAMPLES);
    }

    #[test]
    fn buckets_hold_the_last_size_in_each_slice() {
        let mut h = QueueHistory::default();
        h.record(at(900), 5);
        h.record(at(910), 7);
        h.record(at(2_700), 9);
        let now = at(3_600);
        let b = h.buckets(now, 6);
        assert_eq!(b, vec![None, Some(7), Some(7), Some(7), Some(9), Some(9)]);
        assert_eq!(h.buckets(now, 0), Vec::<Option<u64>>::new());
        // An hour later with no count since, the last size still holds.
        let later = now + Duration::seconds(WINDOW_SECONDS);
        assert_eq!(h.buckets(later, 2), vec![Some(9), Some(9)]);
    }
}
