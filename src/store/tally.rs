//! Counting the queue's groups for the Clusters view, once for both
//! backends: each streams the matching rows (type, account, last error,
//! last change) in its own way and hands each row's values here. No SQL.

use std::collections::HashMap;

use crate::domain::clusters::{AGE_BUCKETS, AGE_UNREADABLE};
use crate::domain::{Cluster, ClusterDimension, Clusters};

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
    /// Seconds since the epoch: what ages are measured from.
    now: i64,
}

impl Tally {
    pub(super) fn new(now: i64) -> Tally {
        Tally {
            text: Default::default(),
            ages: HashMap::new(),
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
        Clusters::from_groups(groups, top)
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
