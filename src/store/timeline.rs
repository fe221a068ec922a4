//! The time buckets of the Clusters chart and of each group's sparkline,
//! filled in the same one pass as the counts. The step is only known once
//! the oldest row is, so counting starts at the shortest step and, when an
//! older row arrives, every group's buckets are merged into the next step
//! that reaches it. Each step is a whole multiple of the one before, so a
//! merge moves whole buckets and the counts stay exact.

use crate::domain::clusters::TIMELINE_BUCKETS;

/// The steps a timeline's buckets may take, shortest first, in seconds:
/// 1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 1 d, 7 d, 28 d; past that, 28 d
/// doubled as often as needed.
const STEPS: [i64; 9] = [
    60, 300, 900, 3_600, 10_800, 21_600, 86_400, 604_800, 2_419_200,
];

const N: i64 = TIMELINE_BUCKETS as i64;

/// One group's counts per bucket.
pub(super) type Counts = [u64; TIMELINE_BUCKETS];

/// Where the buckets are: [`TIMELINE_BUCKETS`] of `step` seconds, the
/// last holding `now`, each starting on a multiple of `step`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    now: i64,
    step: i64,
}

impl Grid {
    pub(super) fn new(now: i64) -> Grid {
        Grid {
            now,
            step: STEPS[0],
        }
    }

    /// The grid of `step` seconds ending with the bucket of `now`.
    pub(super) fn with_step(now: i64, step: i64) -> Grid {
        Grid { now, step }
    }

    pub(super) fn step(self) -> i64 {
        self.step
    }

    /// Seconds since the epoch where the first bucket starts.
    pub(super) fn start(self) -> i64 {
        (self.now.div_euclid(self.step) + 1 - N) * self.step
    }

    /// The step the grid needs to hold `at`, when longer than its own.
    pub(super) fn widen_for(self, at: i64) -> Option<Grid> {
        if at >= self.start() {
            return None;
        }
        let mut step = self.step;
        let mut i = STEPS
            .iter()
            .position(|&s| s == step)
            .map_or(STEPS.len(), |i| i + 1);
        while at
            < (Grid {
                now: self.now,
                step,
            })
            .start()
        {
            step = STEPS.get(i).copied().unwrap_or(step * 2);
            i += 1;
        }
        Some(Grid {
            now: self.now,
            step,
        })
    }

    /// The bucket of `at`, which the grid holds (later than now: the last).
    pub(super) fn index(self, at: i64) -> usize {
        let i = (at - self.start()).div_euclid(self.step).clamp(0, N - 1);
        usize::try_from(i).unwrap_or(0)
    }

    /// `counts` on this grid moved onto `wider`, whose step is a whole
    /// multiple of this one's.
    pub(super) fn merge_into(self, wider: Grid, counts: &mut Counts) {
        let old = *counts;
        *counts = [0; TIMELINE_BUCKETS];
        for (i, n) in old.iter().enumerate().filter(|(_, n)| **n > 0) {
            let at = self.start() + self.step * i as i64;
            counts[wider.index(at)] += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_is_a_whole_multiple_of_the_one_before() {
        for pair in STEPS.windows(2) {
            assert_eq!(pair[1] % pair[0], 0, "{pair:?}");
        }
    }

    #[test]
    fn a_widened_grid_holds_the_time_and_now() {
        let now = 1_780_000_123;
        for back in [0, 61, 1_859, 1_861, 86_400 * 40, 86_400 * 4_000] {
            let grid = Grid::new(now);
            let grid = grid.widen_for(now - back).unwrap_or(grid);
            assert!(grid.start() <= now - back, "{back}");
            assert_eq!(grid.index(now), TIMELINE_BUCKETS - 1);
        }
    }
}
