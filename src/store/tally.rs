//! Counting the queue's groups for the Clusters view, once for both
//! backends: each streams the matching rows (type, account, last error,
//! last change) in its own way and hands each row's values here. No SQL.
//! Each group also counts its rows per time bucket (256 bytes a group),
//! for the chart and the sparklines.

use std::collections::HashMap;

use super::cells::CellRead;
use super::timeline::{Counts, Grid};
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
    ages: HashMap<&'static str, Group>,
    /// Seconds since the epoch: what ages are measured from.
    now: i64,
    grid: Grid,
    /// Every row with a readable time, per bucket.
    timeline: Counts,
    /// Whether any row's time was readable.
    timed: bool,
    /// The bucket of the row being counted, set by [`Tally::age`].
    row: Option<usize>,
}

/// One group's rows, in all and per bucket.
#[derive(Default)]
struct Group {
    count: i64,
    buckets: Counts,
}

impl Group {
    fn add(&mut self, bucket: Option<usize>) {
        self.count += 1;
        if let Some(n) = bucket.and_then(|i| self.buckets.get_mut(i)) {
            *n += 1;
        }
    }
}

impl Tally {
    pub(super) fn new(now: i64) -> Tally {
        Tally {
            text: Default::default(),
            ages: HashMap::new(),
            now,
            grid: Grid::new(now),
            timeline: [0; TIMELINE_BUCKETS],
            timed: false,
            row: None,
        }
    }

    /// Counts text dimension `i` (0 type, 1 account, 2 last error) of one
    /// row, in the time bucket [`Tally::age`] found for it; `None` is its
    /// own group. Looked up borrowed, so a row allocates
    /// nothing once its values were seen.
    pub(super) fn text(&mut self, i: usize, value: Option<&str>) {
        let Some(counts) = self.text.get_mut(i) else {
            return;
        };
        let row = self.row;
        match value {
            None => counts.null.add(row),
            Some(v) => match counts.values.get_mut(v) {
                Some(group) => group.add(row),
                None => {
                    let mut group = Group::default();
                    group.add(row);
                    counts.values.insert(v.to_string(), group);
                }
            },
        }
    }

    /// Counts one row's last change (seconds since the epoch; None when it
    /// is not a time) in its age group and its time bucket. Called first
    /// for each row, so the row's text groups count in the same bucket.
    pub(super) fn age(&mut self, instant: Option<i64>) {
        self.row = instant.map(|at| {
            if let Some(wider) = self.grid.widen_for(at) {
                self.widen(wider);
            }
            self.timed = true;
            self.grid.index(at)
        });
        if let Some(n) = self.row.and_then(|i| self.timeline.get_mut(i)) {
            *n += 1;
        }
        let row = self.row;
        self.ages
            .entry(age_bucket(instant, self.now))
            .or_default()
            .add(row);
    }

    /// Every count so far moved onto the `wider` grid.
    fn widen(&mut self, wider: Grid) {
        let grid = self.grid;
        let groups = self
            .text
            .iter_mut()
            .flat_map(|t| t.values.values_mut().chain(std::iter::once(&mut t.null)));
        for group in groups.chain(self.ages.values_mut()) {
            grid.merge_into(wider, &mut group.buckets);
        }
        grid.merge_into(wider, &mut self.timeline);
        self.grid = wider;
    }

    /// The `top` biggest groups of each dimension.
    /// One row of [`crate::store::filter::clusters_sql`], read tolerantly:
    /// the time first, so the row's groups count in its bucket.
    pub(super) fn row<C: CellRead>(&mut self, c: &mut C) -> Result<(), C::Error> {
        self.age(c.opt_int(3, "updated_at")?);
        for i in 0..3 {
            let value = c.opt_text(i, "cluster value")?;
            self.text(i, value.as_deref());
        }
        Ok(())
    }

    pub(super) fn into_clusters(self, top: usize) -> Clusters {
        let timed = self.timed;
        let groups = TEXT_DIMENSIONS
            .iter()
            .zip(self.text)
            .flat_map(|(&dimension, counts)| counts.into_groups(dimension, timed))
            .chain(self.ages.into_iter().map(|(label, group)| {
                group.into_cluster(ClusterDimension::Age, Some(label.to_string()), timed)
            }))
            .collect();
        let mut clusters = Clusters::from_groups(groups, top);
        if timed {
            clusters.timeline = Timeline {
                start: self.grid.start(),
                step: self.grid.step(),
                counts: self.timeline.to_vec(),
            };
        }
        clusters
    }
}

impl Group {
    fn into_cluster(
        self,
        dimension: ClusterDimension,
        value: Option<String>,
        timed: bool,
    ) -> Cluster {
        Cluster {
            dimension,
            value,
            count: self.count,
            timeline: if timed {
                self.buckets.to_vec()
            } else {
                Vec::new()
            },
        }
    }
}

/// One text dimension's counts: per value, and the NULLs.
#[derive(Default)]
struct TextCounts {
    values: HashMap<String, Group>,
    null: Group,
}

impl TextCounts {
    fn into_groups(
        self,
        dimension: ClusterDimension,
        timed: bool,
    ) -> impl Iterator<Item = Cluster> {
        let null = (self.null.count > 0).then(|| self.null.into_cluster(dimension, None, timed));
        self.values
            .into_iter()
            .map(move |(value, group)| group.into_cluster(dimension, Some(value), timed))
            .chain(null)
    }
}

/// The bucket of an operation stuck since `instant` (seconds since
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
            for (i, at) in rows.iter().enumerate() {
                tally.age(*at);
                tally.text(0, Some(["a", "b", "c"][i % 3]));
            }
            let clusters = tally.into_clusters(5);
            // Each group's buckets add up to the chart's.
            let receivers = &clusters.sections[0].top;
            for (i, &n) in clusters.timeline.counts.iter().enumerate() {
                let sum: u64 = receivers.iter().map(|g| g.timeline[i]).sum();
                assert_eq!(sum, n, "spread {spread}, bucket {i}");
            }
            let group_a = receivers
                .iter()
                .find(|g| g.value.as_deref() == Some("a"))
                .unwrap()
                .clone();
            let t = clusters.timeline;
            assert_eq!(t.counts.len(), TIMELINE_BUCKETS);
            assert!(t.start <= rows.iter().flatten().min().copied().unwrap_or(now));
            assert!(t.start + t.step * TIMELINE_BUCKETS as i64 > now);
            for (i, &n) in t.counts.iter().enumerate() {
                let from = t.start + t.step * i as i64;
                let last = i + 1 == TIMELINE_BUCKETS;
                let inside = |at: &Option<i64>| {
                    at.is_some_and(|at| at >= from && (last || at < from + t.step))
                };
                let direct = rows.iter().filter(|at| inside(at)).count() as u64;
                assert_eq!(n, direct, "spread {spread}, bucket {i}");
                // And so does one group's, counted over its own rows.
                let a = rows.iter().step_by(3).filter(|at| inside(at)).count() as u64;
                assert_eq!(group_a.timeline[i], a, "spread {spread}, bucket {i}");
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
