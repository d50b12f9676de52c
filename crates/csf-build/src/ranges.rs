//! Key ranges: the cut of a tensor's entries, sorted by their storage-order
//! key, into consecutive ranges that build alone and join exactly
//! ([`Joiner`](crate::Joiner)). The external builder cuts its spill
//! partitions with them; a cluster build cuts its shuffle with them.
//!
//! A bound is a whole storage-order key, not a level-0 coordinate: a range
//! holds the keys at or above the bound before it and below its own, so a
//! level-0 coordinate that holds most of the entries (power-law data) is
//! spread over several ranges, and the duplicates of one index, which share
//! a key, always fall in one range.

use std::cmp::Ordering;

use crate::build::{check_permutation, entry_count};
use crate::{check_rank, BuildError, Indices, Source};

/// Keys sorted to choose the bounds: a systematic sample of the keys given
/// beyond this many (plenty for thousands of ranges).
pub(crate) const QUANTILE_SAMPLE: usize = 1 << 16;

/// The cut of the storage-order key space into ranges: range `r` holds the
/// keys in `[bounds[r - 1], bounds[r])`, open at both ends.
///
/// # Example
/// ```
/// use csf_build::{Indices, KeyRanges};
///
/// // Entries of a rank-3 tensor, stored in mode order [2, 0, 1]: the key of
/// // (i, j, k) is (k, i, j). Two ranges, cut at the sample's median key.
/// let sample = [0, 0, 0, 1, 0, 1, 0, 1, 2, 1, 1, 3];
/// let ranges = KeyRanges::from_sample(Indices::RowMajor(&sample), 3, &[2, 0, 1], 2)?;
/// assert_eq!(ranges.bounds(), &[vec![2, 0, 1]]);
/// assert_eq!(ranges.range_of(&[0, 1, 1]), 0); // key (1, 0, 1)
/// assert_eq!(ranges.range_of(&[0, 1, 2]), 1); // key (2, 0, 1): the bound itself
/// # Ok::<(), csf_build::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRanges {
    mode_order: Vec<u32>,
    bounds: Vec<Vec<u64>>,
}

impl KeyRanges {
    /// At most `ranges` ranges (at least one) that cut a sample of entries
    /// into near-equal shares, by quantiles of their storage-order keys.
    /// Equal keys never straddle a cut, so a sample with few distinct keys
    /// gives fewer ranges.
    ///
    /// # Errors
    /// [`BuildError::RankTooSmall`] or [`RankTooLarge`](BuildError::RankTooLarge),
    /// [`BuildError::BadModeOrder`], and [`BuildError::LengthMismatch`] for
    /// coordinates that are not whole entries.
    pub fn from_sample(
        sample: Indices<'_>,
        rank: usize,
        mode_order: &[u32],
        ranges: usize,
    ) -> Result<Self, BuildError> {
        check_rank(rank)?;
        check_permutation(mode_order, rank)?;
        let len = entry_count(sample, rank)?;
        let shape = vec![0; rank];
        let source = Source { shape: &shape, indices: sample, len, packed: None };
        let stride = len.div_ceil(QUANTILE_SAMPLE).max(1);
        let keys: Vec<Vec<u64>> = (0..len)
            .step_by(stride)
            .map(|entry| mode_order.iter().map(|&d| source.coord(entry, d as usize)).collect())
            .collect();
        Ok(Self { mode_order: mode_order.to_vec(), bounds: cut(keys, ranges) })
    }

    /// The ranges cut at `bounds`, storage-order keys in strictly increasing
    /// order (as [`bounds`](Self::bounds) gives them: to hand a cut made on
    /// one machine to others).
    ///
    /// # Errors
    /// [`BuildError::RankTooSmall`] or [`RankTooLarge`](BuildError::RankTooLarge),
    /// [`BuildError::BadModeOrder`], [`BuildError::LengthMismatch`] for a
    /// bound of another length than the mode order, and
    /// [`BuildError::UnorderedBounds`] for a bound not above the one before it.
    pub fn from_bounds(mode_order: &[u32], bounds: Vec<Vec<u64>>) -> Result<Self, BuildError> {
        let rank = mode_order.len();
        check_rank(rank)?;
        check_permutation(mode_order, rank)?;
        for (at, bound) in bounds.iter().enumerate() {
            if bound.len() != rank {
                let (found, expected) = (bound.len() as u64, rank as u64);
                return Err(BuildError::LengthMismatch { what: "key-range bound", found, expected });
            }
            if at > 0 && bounds.get(at - 1).is_some_and(|before| before >= bound) {
                return Err(BuildError::UnorderedBounds { at });
            }
        }
        Ok(Self { mode_order: mode_order.to_vec(), bounds })
    }

    /// The storage order the keys follow.
    pub fn mode_order(&self) -> &[u32] {
        &self.mode_order
    }

    /// The bounds between consecutive ranges, storage-order keys in strictly
    /// increasing order: one fewer than there are ranges.
    pub fn bounds(&self) -> &[Vec<u64>] {
        &self.bounds
    }

    /// How many ranges there are (at least one).
    pub fn len(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Always `false`: there is at least one range. (For the `len` convention.)
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The range of the entry at logical index `index` (coordinates missing
    /// from a short `index` read as 0).
    pub fn range_of(&self, index: &[u64]) -> usize {
        range_of(&self.bounds, self.mode_order.iter().map(|&d| index.get(d as usize).copied().unwrap_or(0)))
    }

    /// The range of every entry of `indices`, in entry order.
    ///
    /// # Errors
    /// [`BuildError::LengthMismatch`] for coordinates that are not whole
    /// entries of the mode order's rank.
    pub fn assign(&self, indices: Indices<'_>) -> Result<Vec<u32>, BuildError> {
        let rank = self.mode_order.len();
        let len = entry_count(indices, rank)?;
        let shape = vec![0; rank];
        let source = Source { shape: &shape, indices, len, packed: None };
        Ok((0..len)
            .map(|entry| {
                let key = self.mode_order.iter().map(|&d| source.coord(entry, d as usize));
                // Fewer than u32::MAX ranges: each is a key of a sample held in memory.
                u32::try_from(range_of(&self.bounds, key)).unwrap_or(u32::MAX)
            })
            .collect())
    }
}

/// The range of a storage-order key: how many bounds are at or below it
/// (compared in place, without making the key: this runs once per entry).
pub(crate) fn range_of(bounds: &[Vec<u64>], key: impl Iterator<Item = u64> + Clone) -> usize {
    bounds.partition_point(|bound| bound.iter().copied().cmp(key.clone()) != Ordering::Greater)
}

/// Up to `parts - 1` strictly increasing keys that cut `keys` into `parts`
/// near-equal ranges. Equal keys never straddle a cut: a cut is a key, and a
/// range holds the keys below it.
pub(crate) fn cut(mut keys: Vec<Vec<u64>>, parts: usize) -> Vec<Vec<u64>> {
    keys.sort_unstable();
    let mut bounds: Vec<Vec<u64>> = Vec::new();
    for p in 1..parts {
        let Some(key) = keys.get(p * keys.len() / parts) else { continue };
        // A cut at the smallest key would leave the first range empty.
        let above_last = bounds.last().map_or(Some(key) != keys.first(), |b| key > b);
        if above_last {
            bounds.push(key.clone());
        }
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hot_level_zero_coordinate_spans_several_ranges() {
        // Half of the entries under i = 0: the cut falls inside that slice.
        let mut flat = Vec::new();
        for j in 0..50u64 {
            flat.extend([0, j, 0]);
        }
        for i in 1..51u64 {
            flat.extend([i, 0, 0]);
        }
        let ranges = KeyRanges::from_sample(Indices::RowMajor(&flat), 3, &[0, 1, 2], 4).unwrap();
        assert_eq!(ranges.len(), 4);
        let zero_slice: Vec<usize> = (0..50).map(|j| ranges.range_of(&[0, j, 0])).collect();
        assert_eq!(zero_slice.first(), Some(&0));
        assert!(zero_slice.contains(&1), "{zero_slice:?}");
        // Ranges follow key order.
        let assigned = ranges.assign(Indices::RowMajor(&flat)).unwrap();
        assert!(assigned.windows(2).all(|w| w[0] <= w[1]), "{assigned:?}");
    }

    #[test]
    fn equal_keys_never_straddle_a_cut() {
        let flat: Vec<u64> = [[1, 1, 1]; 10].into_iter().chain([[2, 0, 0]; 2]).flatten().collect();
        let ranges = KeyRanges::from_sample(Indices::RowMajor(&flat), 3, &[0, 1, 2], 8).unwrap();
        assert_eq!(ranges.bounds(), &[vec![2, 0, 0]]);
    }

    #[test]
    fn bounds_are_checked() {
        assert!(matches!(
            KeyRanges::from_bounds(&[0, 1, 2], vec![vec![1, 0, 0], vec![1, 0, 0]]),
            Err(BuildError::UnorderedBounds { at: 1 })
        ));
        assert!(matches!(
            KeyRanges::from_bounds(&[0, 1, 2], vec![vec![1, 0]]),
            Err(BuildError::LengthMismatch { .. })
        ));
        assert!(matches!(KeyRanges::from_bounds(&[0, 0, 2], vec![]), Err(BuildError::BadModeOrder { .. })));
        let ranges = KeyRanges::from_bounds(&[1, 0, 2], vec![vec![3, 0, 0]]).unwrap();
        assert_eq!((ranges.range_of(&[9, 2, 9]), ranges.range_of(&[0, 3, 0])), (0, 1));
        assert_eq!(ranges.range_of(&[]), 0);
    }

    #[test]
    fn an_empty_sample_gives_one_range() {
        let ranges = KeyRanges::from_sample(Indices::RowMajor(&[]), 3, &[0, 1, 2], 16).unwrap();
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges.assign(Indices::RowMajor(&[5, 5, 5])).unwrap(), vec![0]);
    }
}
