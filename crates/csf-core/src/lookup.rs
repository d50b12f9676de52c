//! Spec § Element Lookup.

use hurray_format::le::U64Array;

use crate::values::Value;
use crate::view::CsfView;

/// Why a query index cannot be looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The index does not have one coordinate per dimension.
    #[error("index has {got} coordinates, the tensor has rank {rank}")]
    WrongRank {
        /// Coordinates given.
        got: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// A coordinate is outside the shape.
    #[error("coordinate {coord} of dimension {dim} is outside its extent {extent}")]
    OutOfBounds {
        /// The logical dimension.
        dim: usize,
        /// The coordinate given.
        coord: u64,
        /// The dimension's extent.
        extent: u64,
    },
    /// `mode_order[level]` names no dimension (only on unvalidated data).
    #[error("mode_order[{level}] = {dim} names no dimension")]
    BadModeOrder {
        /// The level.
        level: usize,
        /// The value found in `mode_order`.
        dim: u32,
    },
}

impl CsfView<'_> {
    /// The leaf position of logical index `index`, or `None` when the element
    /// is an implicit zero: the spec's lookup, one binary search per level
    /// over the parent's slice, so `O(rank * log n)` on any data.
    ///
    /// # Errors
    /// [`LookupError`] when `index` has the wrong rank or leaves the shape.
    pub fn find(&self, index: &[u64]) -> Result<Option<usize>, LookupError> {
        let rank = self.rank();
        if index.len() != rank {
            return Err(LookupError::WrongRank { got: index.len(), rank });
        }
        for (dim, (&coord, &extent)) in index.iter().zip(self.shape()).enumerate() {
            if coord >= extent {
                return Err(LookupError::OutOfBounds { dim, coord, extent });
            }
        }
        // Step 2: the virtual root.
        let mut parent = 0usize;
        for (level, (lvl, &dim)) in self.levels().iter().zip(self.mode_order()).enumerate() {
            // Step 1: q_L = idx[mode_order[L]].
            let q = *index.get(dim as usize).ok_or(LookupError::BadModeOrder { level, dim })?;
            // Step 3: search the parent's slice of crd_L.
            let (start, end) = lvl.children(parent);
            match search(lvl.crd, start, end, q) {
                Some(node) => parent = node,
                None => return Ok(None),
            }
        }
        // Step 4: after the leaf level, `parent` is the leaf position.
        Ok(Some(parent))
    }

    /// The stored value at `index`, or `None` for an implicit zero. A leaf
    /// position past the values buffer (possible only on unvalidated data)
    /// also reads as `None`.
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get(&self, index: &[u64]) -> Result<Option<Value>, LookupError> {
        Ok(self.find(index)?.and_then(|leaf| self.values().get(leaf)))
    }

    /// The value at `index`, implicit zeros included, as `f64`.
    ///
    /// # Errors
    /// As [`CsfView::find`].
    pub fn get_f64(&self, index: &[u64]) -> Result<f64, LookupError> {
        Ok(self.get(index)?.map_or(0.0, Value::to_f64))
    }
}

/// Binary search for `q` in `crd[start..end)` (which the caller has clamped to
/// the array); returns the absolute node index. Sorted input is the spec's
/// invariant 4; on unsorted input the answer is wrong but the search is still
/// in bounds and logarithmic.
///
/// Aligned little-endian arrays are read as a native slice, others byte-wise,
/// but both run the same search, so that aligned and unaligned copies of the
/// same bytes give the same answer even on unsorted or duplicate coordinates.
#[inline]
fn search(crd: U64Array<'_>, start: usize, end: usize, q: u64) -> Option<usize> {
    let found = match crd.as_native() {
        Some(native) => {
            let slice = native.get(start..end)?;
            last_not_above(slice.len(), q, |i| slice.get(i).copied())
        }
        None => {
            let slice = crd.slice(start, end);
            last_not_above(slice.len(), q, |i| slice.get(i))
        }
    };
    found.map(|k| start + k)
}

/// The binary search proper, over positions `0..len`: the last position whose
/// coordinate is at most `q`, if it equals `q`. Unlike a search that stops at
/// the first match, the halving loop runs a fixed number of times for a given
/// length, which keeps it predictable for the processor.
#[inline(always)]
fn last_not_above(len: usize, q: u64, at: impl Fn(usize) -> Option<u64>) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let (mut base, mut size) = (0, len);
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        // `mid < base + size <= len`: always in bounds.
        if at(mid)? <= q {
            base = mid;
        }
        size -= half;
    }
    (at(base)? == q).then_some(base)
}
