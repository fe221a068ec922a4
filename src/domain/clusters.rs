//! The triage queue grouped so an incident reads as one big group, not as
//! 2,000 lines: the dimensions, a group and its count.
//! Pure data; the store computes the counts, the console draws them.

/// What the queue is grouped by, in the order the Clusters view shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterDimension {
    /// The receiver: the operation's type.
    OpType,
    Account,
    /// The error of the operation's last attempt.
    LastError,
    /// How long since the operation got stuck: its last attempt's start,
    /// else its last change.
    Age,
}

impl ClusterDimension {
    pub const ALL: [ClusterDimension; 4] = [
        ClusterDimension::OpType,
        ClusterDimension::Account,
        ClusterDimension::LastError,
        ClusterDimension::Age,
    ];

    pub fn title(self) -> &'static str {
        match self {
            ClusterDimension::OpType => "receiver (op type)",
            ClusterDimension::Account => "account",
            ClusterDimension::LastError => "last error",
            ClusterDimension::Age => "age (since stuck)",
        }
    }
}

/// The age buckets, youngest first, with the seconds each ends below
/// (`None`: no end). The store spells its `CASE` from this table.
pub const AGE_BUCKETS: [(&str, Option<i64>); 4] = [
    ("under 1h", Some(3_600)),
    ("1h to 24h", Some(86_400)),
    ("1d to 7d", Some(604_800)),
    ("older than 7d", None),
];

/// The bucket of an operation whose `updated_at` is not a time.
pub const AGE_UNREADABLE: &str = "unreadable time";

/// One group of the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub dimension: ClusterDimension,
    /// The value shared by the group, as the ledger holds it (untrusted);
    /// `None` for operations with no error recorded.
    pub value: Option<String>,
    pub count: i64,
    /// The group's operations per bucket of [`Clusters::timeline`], for
    /// its sparkline; empty when no time was read.
    pub timeline: Vec<u64>,
}

/// One dimension's biggest groups, and how many more there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSection {
    pub dimension: ClusterDimension,
    /// Sorted by count, biggest first (ties by value, so the order is
    /// stable between refreshes).
    pub top: Vec<Cluster>,
    pub more_groups: usize,
    /// Operations in the groups not shown.
    pub more_count: i64,
}

/// The queue grouped by every dimension.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clusters {
    pub sections: Vec<ClusterSection>,
    /// Operations grouped (each counted once per dimension).
    pub total: i64,
    /// When the grouped operations got stuck, over time.
    pub timeline: Timeline,
}

/// How many bars the Clusters chart has: enough to see a start and a
/// trend, few enough that each bar is a few columns wide at 120.
pub const TIMELINE_BUCKETS: usize = 32;

/// Operations counted by when they last changed, in [`TIMELINE_BUCKETS`]
/// equal buckets ending with the one that holds now. The step is the
/// first of 1 min, 5 min, 15 min, 1 h, 3 h, 6 h, 1 d, 7 d or 28 d (then
/// 28 d doubled as often as needed) that reaches back to the oldest operation's
/// last change, so the axis reads in round steps and the start is on the
/// chart. Times that are not readable are left out; later than now counts
/// as now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Seconds since the epoch where the first bucket starts (a multiple
    /// of `step`).
    pub start: i64,
    /// Seconds each bucket spans.
    pub step: i64,
    /// Operations per bucket, oldest first; empty when no time was read.
    pub counts: Vec<u64>,
}

impl Clusters {
    /// Keeps the `top` biggest groups of each dimension out of every
    /// group's count (any order).
    pub fn from_groups(groups: Vec<Cluster>, top: usize) -> Clusters {
        let mut total = 0;
        let sections = ClusterDimension::ALL
            .iter()
            .map(|&dimension| {
                let mut all: Vec<Cluster> = groups
                    .iter()
                    .filter(|g| g.dimension == dimension)
                    .cloned()
                    .collect();
                all.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
                let rest = all.split_off(top.min(all.len()));
                if dimension == ClusterDimension::OpType {
                    total = all.iter().chain(&rest).map(|g| g.count).sum();
                }
                ClusterSection {
                    dimension,
                    top: all,
                    more_groups: rest.len(),
                    more_count: rest.iter().map(|g| g.count).sum(),
                }
            })
            .collect();
        Clusters {
            sections,
            total,
            timeline: Timeline::default(),
        }
    }

    /// The groups a cursor moves over, section after section.
    pub fn groups(&self) -> impl Iterator<Item = &Cluster> {
        self.sections.iter().flat_map(|s| s.top.iter())
    }
}
