//! Reading a filter a slice of ids at a time, for a ledger where no index
//! serves filters yet ([`Reads::filters_scan`]): each step is one
//! statement bounded by an id range through the primary key
//! ([`Reads::range_page`]), so the first matches of a big ledger show at
//! once and a reader can stop between steps. Newest first: the walk goes
//! down from the highest id the ledger held when it began.

use chrono::{DateTime, Utc};

use super::backend::Reads;
use crate::domain::OperationRow;
use crate::error::Result;
use crate::query::Query;

/// Ids one step reads at most: at a million operations a step takes tens
/// of milliseconds, so a key waits at most that long for the reader.
pub const STEP_IDS: i64 = 100_000;

/// Ids the first step reads; each step then reads as many as were read
/// before it, up to [`STEP_IDS`]. Before adoption a row costs more than
/// its match (its last event is looked for without an index), so a first
/// slice this small puts the first rows on screen sooner.
const FIRST_STEP_IDS: i64 = 10_000;

/// How far a scan has walked: the ids it covers and where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanPlace {
    /// The lowest and highest operation id when the scan began.
    pub low: i64,
    pub high: i64,
    /// Every id from `high` down to here, this one excluded, is read;
    /// the ids below it are not yet.
    pub next: i64,
}

impl ScanPlace {
    /// Ids read so far.
    pub fn covered(&self) -> u64 {
        u64::try_from(self.high - self.next + 1).unwrap_or(0)
    }

    /// Ids the scan walks in all.
    pub fn span(&self) -> u64 {
        u64::try_from(self.high - self.low + 1).unwrap_or(0)
    }

    /// Every id is read.
    pub fn done(&self) -> bool {
        self.next <= self.low
    }
}

/// What one step found, and where the scan stands after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanStep {
    pub rows: Vec<OperationRow>,
    pub place: ScanPlace,
}

/// Reads the next slice of the scan at `from` (a new scan when `None`):
/// [`FIRST_STEP_IDS`] ids, twice as many each step up to [`STEP_IDS`], and
/// at most `limit` matches, newest first. A
/// step that fills `limit` stops at its last match, where the next one
/// goes on.
pub(super) fn step<R: Reads + ?Sized>(
    reads: &R,
    query: &Query,
    from: Option<ScanPlace>,
    limit: usize,
    now: DateTime<Utc>,
) -> Result<ScanStep> {
    step_of(reads, query, from, (STEP_IDS, limit), now)
}

/// [`step`], reading at most `ids` ids.
fn step_of<R: Reads + ?Sized>(
    reads: &R,
    query: &Query,
    from: Option<ScanPlace>,
    (ids, limit): (i64, usize),
    now: DateTime<Utc>,
) -> Result<ScanStep> {
    let place = match from {
        Some(place) => place,
        None => match reads.id_span()? {
            Some((low, high)) => ScanPlace {
                low,
                high,
                next: high.saturating_add(1),
            },
            // Nothing to walk: a scan that is done before it starts.
            None => ScanPlace {
                low: 1,
                high: 0,
                next: 1,
            },
        },
    };
    if place.done() {
        return Ok(ScanStep {
            rows: Vec::new(),
            place,
        });
    }
    let through = place.next - 1;
    let slice = slice_ids(place.covered(), ids);
    let above = through.saturating_sub(slice).max(place.low - 1);
    let rows = reads.range_page(query, (above, through), limit, now)?;
    let next = match rows.last() {
        Some(last) if rows.len() >= limit => last.id.0,
        _ => above + 1,
    };
    Ok(ScanStep {
        rows,
        place: ScanPlace { next, ..place },
    })
}

/// Ids the next slice reads, `covered` being read: as many again, from
/// [`FIRST_STEP_IDS`] up to `most`.
fn slice_ids(covered: u64, most: i64) -> i64 {
    i64::try_from(covered)
        .unwrap_or(i64::MAX)
        .clamp(FIRST_STEP_IDS.min(most), most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::State;
    use crate::store::parity::{now, op, same_on_every_backend};

    /// Slices of 7 ids, 3 matches at most each, walked to the end: the
    /// same rows, in the same order, as the filter read in one statement,
    /// on every backend; and the first slice stops at its third match.
    #[test]
    fn a_scan_walked_slice_by_slice_finds_exactly_the_filters_rows() {
        same_on_every_backend("scan", |ledger, _| {
            let ops: Vec<_> = (0..40)
                .map(|i| {
                    let op_type = if i % 3 == 0 { "refund" } else { "pay" };
                    op(&format!("k-{i:02}"), op_type, State::Unknown)
                })
                .collect();
            ledger.import(&ops, &[]).unwrap();
            let query = Query::parse("type:refund").unwrap();
            let mut whole = Vec::new();
            ledger
                .for_each_row(&query, now(), |r| {
                    whole.push(r.id.0);
                    Ok(())
                })
                .unwrap();
            let (mut walked, mut from, mut steps) = (Vec::new(), None, 0);
            loop {
                let step = step_of(&*ledger.backend, &query, from, (7, 3), now()).unwrap();
                if steps == 0 {
                    assert_eq!(step.rows.len(), 3);
                    assert_eq!(step.place.next, step.rows[2].id.0);
                }
                walked.extend(step.rows.iter().map(|r| r.id.0));
                steps += 1;
                if step.place.done() {
                    break;
                }
                from = Some(step.place);
            }
            assert_eq!(walked, whole);
            assert!(steps > 40 / 7, "{steps} slices");
            walked
        });
    }

    #[test]
    fn slices_start_small_and_grow_to_the_step() {
        let sizes: Vec<i64> = [0, 10_000, 30_000, 500_000]
            .iter()
            .map(|covered| slice_ids(*covered, STEP_IDS))
            .collect();
        assert_eq!(sizes, [10_000, 10_000, 30_000, 100_000]);
        assert_eq!(slice_ids(0, 7), 7);
    }

    #[test]
    fn a_place_counts_what_it_covered() {
        let place = ScanPlace {
            low: 1,
            high: 1000,
            next: 801,
        };
        assert_eq!((place.covered(), place.span()), (200, 1000));
        assert!(!place.done());
        assert!(ScanPlace { next: 1, ..place }.done());
    }
}
