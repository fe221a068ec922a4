//! What a group makes of its members' answers: one page merged by the
//! list's sort keys, counts added up, the Clusters regrouped over the
//! whole incident on one time grid, and what opening each one said.

use chrono::{DateTime, Utc};

use super::super::open::OpenReport;
use super::super::timeline::{Counts, Grid};
use crate::domain::clusters::TIMELINE_BUCKETS;
use crate::domain::{Cluster, Clusters, OperationRow, Seek, Sort, SortKey, StateCounts, Timeline};

/// The members' pages (each in the list's order) as one page of at most
/// `limit`: the first rows after a seek, the last ones before it.
pub(super) fn page(
    pages: Vec<Vec<OperationRow>>,
    sort: Sort,
    seek: &Seek<SortKey>,
    limit: usize,
) -> Vec<OperationRow> {
    let mut rows: Vec<(SortKey, OperationRow)> = pages
        .into_iter()
        .flatten()
        .map(|row| (sort.key_of(&row), row))
        .collect();
    rows.sort_by(|a, b| sort.compare(&a.0, &b.0));
    let rows = rows.into_iter().map(|(_, row)| row);
    match seek {
        Seek::First | Seek::After(_) => rows.take(limit).collect(),
        Seek::Before(_) | Seek::Last => {
            let rows: Vec<OperationRow> = rows.collect();
            let skip = rows.len().saturating_sub(limit);
            rows.into_iter().skip(skip).collect()
        }
    }
}

/// The members' state counts added up.
pub(super) fn state_counts(each: Vec<StateCounts>) -> StateCounts {
    let mut sum = StateCounts::default();
    for counts in each {
        for (state, n) in counts.by_state {
            match sum.by_state.iter_mut().find(|(s, _)| *s == state) {
                Some((_, m)) => *m += n,
                None => sum.by_state.push((state, n)),
            }
        }
        sum.stale_reserved += counts.stale_reserved;
        sum.total += counts.total;
        sum.estimated |= counts.estimated;
    }
    let order = |s: &crate::domain::State| {
        crate::domain::State::KNOWN
            .iter()
            .position(|k| k == s)
            .unwrap_or(usize::MAX)
    };
    sum.by_state.sort_by_key(|(s, _)| order(s));
    sum
}

/// The members' clusters as the whole incident's: groups of the same
/// value added up, the `top` biggest of each dimension kept, every
/// timeline moved onto the widest member's time grid.
pub(super) fn clusters(each: Vec<Clusters>, now: DateTime<Utc>, top: usize) -> Clusters {
    let now = now.timestamp();
    let step = each.iter().map(|c| c.timeline.step).max().unwrap_or(0);
    let wide = (step > 0).then(|| Grid::with_step(now, step));
    let regrid = |timeline: &Timeline, counts: &[u64]| -> Vec<u64> {
        let Some(wide) = wide.filter(|_| !counts.is_empty() && timeline.step > 0) else {
            return Vec::new();
        };
        let mut moved: Counts = [0; TIMELINE_BUCKETS];
        for (i, n) in counts.iter().enumerate().take(TIMELINE_BUCKETS) {
            moved[i] = *n;
        }
        Grid::with_step(now, timeline.step).merge_into(wide, &mut moved);
        moved.to_vec()
    };
    let mut groups: Vec<Cluster> = Vec::new();
    let mut total = 0;
    let mut chart: Vec<u64> = Vec::new();
    for member in &each {
        total += member.total;
        add(
            &mut chart,
            &regrid(&member.timeline, &member.timeline.counts),
        );
        for cluster in member.groups() {
            let timeline = regrid(&member.timeline, &cluster.timeline);
            match groups
                .iter_mut()
                .find(|g| g.dimension == cluster.dimension && g.value == cluster.value)
            {
                Some(g) => {
                    g.count += cluster.count;
                    add(&mut g.timeline, &timeline);
                }
                None => groups.push(Cluster {
                    timeline,
                    ..cluster.clone()
                }),
            }
        }
    }
    let mut merged = Clusters::from_groups(groups, top);
    // A member's groups past its own top are known by their count only.
    for section in &mut merged.sections {
        let shown: i64 = section.top.iter().map(|c| c.count).sum();
        let hidden: usize = each
            .iter()
            .flat_map(|c| c.sections.iter())
            .filter(|s| s.dimension == section.dimension)
            .map(|s| s.more_groups)
            .sum();
        section.more_count = (total - shown).max(0);
        section.more_groups = match section.more_count {
            0 => 0,
            _ => section.more_groups.max(hidden).max(1),
        };
    }
    merged.total = total;
    merged.timeline = match wide {
        Some(wide) if !chart.is_empty() => Timeline {
            start: wide.start(),
            step: wide.step(),
            counts: chart,
        },
        _ => Timeline::default(),
    };
    merged
}

fn add(sum: &mut Vec<u64>, more: &[u64]) {
    if sum.len() < more.len() {
        sum.resize(more.len(), 0);
    }
    for (s, m) in sum.iter_mut().zip(more) {
        *s += m;
    }
}

/// What opening one member said, added to the group's report under its
/// name.
pub(super) fn report(sum: &mut OpenReport, name: &str, one: OpenReport) {
    let join = |into: &mut Option<String>, line: Option<String>| {
        if let Some(line) = line {
            let line = format!("{name}: {line}");
            *into = Some(match into.take() {
                Some(before) => format!("{before}; {line}"),
                None => line,
            });
        }
    };
    join(&mut sum.upgraded, one.upgraded);
    join(&mut sum.read_only_reason, one.read_only_reason);
    join(&mut sum.not_adopted, one.not_adopted);
    join(&mut sum.model_aside, one.model_aside);
}
