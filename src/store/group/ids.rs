//! The group's ids in its members' terms: the group numbers rows as
//! [`Numbering`] says, and a page of the group's list after a key, or a
//! slice of its ids, is each member asked after the key or for the slice
//! that holds the same rows. The console only ever sees the group's ids.

use crate::domain::{Numbering, OperationId, Seek, Sort, SortColumn, SortKey, SortValue};

/// The group's numbering ([`Numbering`]), and where a seek or a range of
/// the group's ids falls in each member's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spread {
    numbering: Numbering,
    n: i64,
}

impl Spread {
    pub(super) fn of(members: usize) -> Spread {
        let numbering = Numbering::of(members);
        Spread {
            numbering,
            n: numbering.members(),
        }
    }

    pub(super) fn global(self, member: usize, local: OperationId) -> OperationId {
        self.numbering.global(member, local)
    }

    pub(super) fn split(self, id: OperationId) -> (usize, OperationId) {
        self.numbering.split(id)
    }

    /// The id in member `member` that stands where the group's `id` does:
    /// for every row `x` of that member, `global(x) > id` exactly when
    /// `x > bound` (`above`), or `global(x) < id` exactly when `x < bound`.
    fn bound(self, member: usize, id: OperationId, above: bool) -> OperationId {
        let (at, local) = self.split(id);
        let shift = match above {
            true => -i64::from(member > at),
            false => i64::from(member < at),
        };
        OperationId(local.0.saturating_add(shift))
    }

    /// A seek of the group's list, said in member `member`'s own ids.
    pub(super) fn seek(self, member: usize, sort: Sort, seek: &Seek<SortKey>) -> Seek<SortKey> {
        // After a key in a descending list is below it; before, above.
        let local = |key: &SortKey, above: bool| {
            let id = self.bound(member, key.id, above);
            let value = match (sort.column, &key.value) {
                (SortColumn::Id, SortValue::Int(_)) => SortValue::Int(id.0),
                (_, value) => value.clone(),
            };
            SortKey { value, id }
        };
        match seek {
            Seek::First => Seek::First,
            Seek::Last => Seek::Last,
            Seek::After(key) => Seek::After(local(key, !sort.descending)),
            Seek::Before(key) => Seek::Before(local(key, sort.descending)),
        }
    }

    /// The ids of member `member` within the group's range `(low, high]`.
    pub(super) fn range(self, member: usize, (low, high): (i64, i64)) -> (i64, i64) {
        let k = i64::try_from(member).unwrap_or(0);
        (
            low.saturating_sub(k).div_euclid(self.n),
            high.saturating_sub(k).div_euclid(self.n),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_back_to_their_member_and_keep_each_members_order() {
        let spread = Spread::of(3);
        for member in 0..3 {
            for local in [0, 1, 7, 1_000_000] {
                let id = spread.global(member, OperationId(local));
                assert_eq!(spread.split(id), (member, OperationId(local)));
            }
        }
        assert!(spread.global(2, OperationId(5)) < spread.global(0, OperationId(6)));
    }

    #[test]
    fn a_seek_in_the_groups_order_reads_the_same_rows_in_each_member() {
        let spread = Spread::of(3);
        let ids: Vec<(usize, i64)> = (0..3).flat_map(|m| (1..=6).map(move |x| (m, x))).collect();
        let global = |(m, x): (usize, i64)| spread.global(m, OperationId(x)).0;
        for descending in [true, false] {
            let sort = Sort {
                column: SortColumn::Id,
                descending,
            };
            for &at in &ids {
                let key = SortKey {
                    value: SortValue::Int(global(at)),
                    id: OperationId(global(at)),
                };
                for (seek, after) in [
                    (Seek::After(key.clone()), true),
                    (Seek::Before(key.clone()), false),
                ] {
                    for member in 0..3 {
                        let (Seek::After(local) | Seek::Before(local)) =
                            spread.seek(member, sort, &seek)
                        else {
                            unreachable!()
                        };
                        let below = descending == after;
                        for &(m, x) in ids.iter().filter(|(m, _)| *m == member) {
                            let wanted = match below {
                                true => global((m, x)) < global(at),
                                false => global((m, x)) > global(at),
                            };
                            let got = match below {
                                true => x < local.id.0,
                                false => x > local.id.0,
                            };
                            assert_eq!(wanted, got, "{at:?} {member} {x} {descending} {after}");
                            assert_eq!(local.value, SortValue::Int(local.id.0));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_range_of_the_groups_ids_is_each_members_ids_in_it() {
        let spread = Spread::of(4);
        for member in 0..4 {
            let (low, high) = spread.range(member, (10, 30));
            for x in 0..12 {
                let g = spread.global(member, OperationId(x)).0;
                assert_eq!(g > 10 && g <= 30, x > low && x <= high, "{member} {x}");
            }
        }
    }
}
