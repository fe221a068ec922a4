//! A filter read a slice of ids at a time: where the ledger has no index
//! for filters yet, a list shows only what its scan has found so far, and
//! says how far the scan got. Plain data; `filtering` moves it.

use crate::store::ScanPlace;

/// How far a list's scan has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListScan {
    /// Where the walk stands; `None` until its first step answers.
    pub place: Option<ScanPlace>,
    /// Matches found so far (and held in the list or scrolled past).
    pub found: u64,
    /// A slice from `place` is asked for and will answer. Asking again
    /// would interrupt it: another process committing rereads the list
    /// every few hundred milliseconds, and a slow slice would never end.
    pub asked: bool,
}

impl ListScan {
    /// Every id was read: `found` is the filter's count.
    pub fn done(&self) -> bool {
        self.place.is_some_and(|p| p.done())
    }

    /// "scanning n of N" while the scan runs, `None` once it is done.
    pub fn progress(&self) -> Option<String> {
        match self.place {
            _ if self.done() => None,
            Some(p) => Some(format!(
                "scanning {} of {}",
                thousands(p.covered()),
                thousands(p.span())
            )),
            None => Some("scanning from the newest".to_string()),
        }
    }

    /// The list's count as the tabs show it: what was found, said as a
    /// lower bound until the scan is done.
    pub fn count(&self) -> String {
        if self.done() {
            self.found.to_string()
        } else {
            format!("≥{}", self.found)
        }
    }
}

/// `1234567` as `1,234,567`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_ids_and_the_count_is_a_bound_until_done() {
        let mut scan = ListScan::default();
        assert_eq!(scan.progress().as_deref(), Some("scanning from the newest"));
        scan.place = Some(ScanPlace {
            low: 1,
            high: 1_000_000,
            next: 800_001,
        });
        scan.found = 12;
        assert_eq!(
            scan.progress().as_deref(),
            Some("scanning 200,000 of 1,000,000")
        );
        assert_eq!(scan.count(), "≥12");
        scan.place = scan.place.map(|p| ScanPlace { next: 1, ..p });
        assert_eq!((scan.progress(), scan.count()), (None, "12".to_string()));
    }
}
