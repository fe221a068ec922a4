//! Counting the queue's groups for the Clusters view, once for both
//! backends: each streams the matching rows (type, account, last error,
//! last change) in its own way and hands each row's values here. No SQL.

use std::collections::HashMap;

use crate::domain::clusters::{AGE_BUCKETS, AGE_UNREADABLE, TIMELINE_BUCKETS};
use crate::domain::{Cluster, ClusterDimension, Clusters, Timeline};

/// The three text dimensions, in the statements' column order.
const TEXT_DIMENSIONS: [ClusterDimension; 3] = [
    ClusterDimension::OpType,
    ClusterDimension::Account,
    ClusterDimension::LastError,
];

/// The counts so far, per dimension.
pub(super) struct Tally {
    text: [TextCounts; 3],
    ages: HashMap<&'static str, i64>,
    /// Last changes per minute since the epoch: the chart's buckets are
    /// only known once the oldest is, and every step is whole minutes.
    minutes: HashMap<i64, u64>,
    /// Seconds since the epoch: what ages are measured from.
    now: i64,
}

impl Tally {
    pub(super) fn new(now: i64) -> Tally {
        Tally {
            text: Default::default(),
            ages: HashMap::new(),
            minutes: HashMap::new(),
            now,
        }
    }

    /// Counts text dimension `i` (0 type, 1 account, 2 last error) of one
    /// row; `None` is its own group. Looked up borrowed, so a row allocates
    /// nothing once its values were seen.
    pub(super) fn text(&mut self, i: usize, value: Option<&str>) {
        let Some(counts) = self.text.get_mut(i) else {
            return;
        };
        match value {
            None => counts.null += 1,
            Some(v) => match counts.values.get_mut(v) {
                Some(n) => *n += 1,
                None => {
                    counts.values.insert(v.to_string(), 1);
                }
            },
        }
    }

    /// Counts one row's last change (seconds since the epoch; None when it
    /// is not a time) in its age bucket.
    pub(super) fn age(&mut self, instant: Option<i64>) {
        *self.ages.entry(age_bucket(instant, self.now)).or_insert(0) += 1;
        if let Some(at) = instant {
            *self.minutes.entry(at.div_euclid(60)).or_insert(0) += 1;
        }
    }

    /// The `top` biggest groups of each dimension.
    pub(super) fn into_clusters(self, top: usize) -> Clusters {
        let groups = TEXT_DIMENSIONS
            .iter()
            .zip(self.text)
            .flat_map(|(&dimension, counts)| counts.into_groups(dimension))
            .chain(self.ages.into_iter().map(|(label, count)| Cluster {
                dimension: ClusterDimension::Age,
                value: Some(label.to_string()),
                count,
            }))
            .collect();
        let mut clusters = Clusters::from_groups(groups, top);
        clusters.timeline = timeline(&self.minutes, self.now);
        clusters
    }
}

/// One text dimension's counts: per value, and the NULLs.
#[derive(Default)]
struct TextCounts {
    values: HashMap<String, i64>,
    null: i64,
}

impl TextCounts {
    fn into_groups(self, dimension: ClusterDimension) -> impl Iterator<Item = Cluster> {
        let null = (self.null > 0).then_some(Cluster {
            dimension,
            value: None,
            count: self.null,
        });
        self.values
            .into_iter()
            .map(move |(value, count)| Cluster {
                dimension,
                value: Some(value),
                count,
            })
            .chain(null)
    }
}

/// The bucket of an operation last changed at `instant` (seconds since
/// the epoch), read from [`AGE_BUCKETS`].
pub(super) fn age_bucket(instant: Option<i64>, now: i64) -> &'static str {
    let Some(at) = instant else {
        return AGE_UNREADABLE;
    };
    let age = now.saturating_sub(at);
    AGE_BUCKETS
        .iter()
        .find(|(_, below)| below.is_none_or(|b| age < b))
        .map_or(AGE_UNREADABLE, |(label, _)| label)
}

/// The steps a timeline's buckets may take, shortest first, in seconds.
const STEPS: [i64; 9] = [
    60, 300, 900, 3_600, 10_800, 21_600, 86_400, 604_800, 2_592_000,
];

/// The buckets of [`Timeline`] out of the counts per minute.
fn timeline(minutes: &HashMap<i64, u64>, now: i64) -> Timeline {
    let Some(oldest) = minutes.keys().min().map(|m| m * 60) else {
        return Timeline::default();
    };
    let buckets = TIMELINE_BUCKETS as i64;
    // The last bucket holds now and ends on a whole step, so the first
    // starts at most (buckets - 1) whole steps before now's.
    let span = now.saturating_sub(oldest).max(0);
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span < (buckets - 1) * s)
        .unwrap_or_else(|| {
            let month = STEPS[STEPS.len() - 1];
            (span / ((buckets - 1) * month) + 1) * month
        });
    let start = (now.div_euclid(step) + 1 - buckets) * step;
    let mut counts = vec![0; TIMELINE_BUCKETS];
    for (minute, n) in minutes {
        let i = (minute * 60 - start).div_euclid(step).clamp(0, buckets - 1);
        if let Some(c) = counts.get_mut(i as usize) {
            *c += n;
        }
    }
    Timeline {
        start,
        step,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bucket holds exactly the rows whose time falls in it, counted
    /// directly over the same rows.
    #[test]
    fn buckets_count_what_a_direct_count_finds() {
        let now = 1_780_000_000;
        for spread in [0, 59, 600, 3_599, 86_400, 9 * 86_400, 400 * 86_400] {
            let rows: Vec<Option<i64>> = (0..500)
                .map(|i| match i % 50 {
                    0 => None,
                    1 => Some(now + 30),
                    _ => Some(now - (i * 7_919) % (spread + 1)),
                })
                .collect();
            let mut tally = Tally::new(now);
            for at in &rows {
                tally.age(*at);
            }
            let t = tally.into_clusters(5).timeline;
            assert_eq!(t.counts.len(), TIMELINE_BUCKETS);
            assert!(t.start <= rows.iter().flatten().min().copied().unwrap_or(now));
            assert!(t.start + t.step * TIMELINE_BUCKETS as i64 > now);
            for (i, &n) in t.counts.iter().enumerate() {
                let from = t.start + t.step * i as i64;
                let last = i + 1 == TIMELINE_BUCKETS;
                let direct = rows
                    .iter()
                    .flatten()
                    .filter(|&&at| at >= from && (last || at < from + t.step))
                    .count() as u64;
                assert_eq!(n, direct, "spread {spread}, bucket {i}");
            }
            let read = rows.iter().flatten().count() as u64;
            assert_eq!(t.counts.iter().sum::<u64>(), read);
        }
    }

    #[test]
    fn no_readable_time_draws_no_timeline() {
        let mut tally = Tally::new(1_000);
        tally.age(None);
        assert_eq!(tally.into_clusters(5).timeline, Timeline::default());
    }
}
