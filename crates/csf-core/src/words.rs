//! Read-only `u64` arrays, native or little-endian bytes, behind one trait;
//! and the clamp that keeps a `pos_L` entry inside its level.
//!
//! Lookup (this crate) and the storage-invariant checks (`csf-validate`)
//! write each kernel once over [`Words`] and run it on a native `&[u64]` when
//! the array can be read as one (little-endian machine, aligned buffer: the
//! common case, and the fast one: one bounds check per read) or on a
//! [`U64Array`] read byte-wise otherwise. Both read the same elements, so
//! aligned and unaligned copies of the same bytes give the same answers.

use hurray_format::le::U64Array;

mod sealed {
    pub trait Sealed {}
    impl Sealed for &[u64] {}
    impl Sealed for hurray_format::le::U64Array<'_> {}
}

/// A read-only array of `u64`s: a native `&[u64]` or a little-endian
/// [`U64Array`]. Every method is total: reads past the end give `None` or
/// nothing, sub-arrays are clamped. Sealed: these two are the only
/// implementations.
pub trait Words: Copy + sealed::Sealed {
    /// The number of elements.
    fn len(self) -> usize;
    /// Whether there is no element.
    fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// Element `i`, or `None` past the end.
    fn get(self, i: usize) -> Option<u64>;
    /// The first element.
    fn first(self) -> Option<u64>;
    /// The last element.
    fn last(self) -> Option<u64>;
    /// The elements in order.
    fn iter(self) -> impl Iterator<Item = u64>;
    /// `self[start..end]`, clamped to the array (an empty array when `start >= end`).
    fn clamped(self, start: usize, end: usize) -> Self;
}

impl Words for &[u64] {
    #[inline]
    fn len(self) -> usize {
        <[u64]>::len(self)
    }
    #[inline]
    fn get(self, i: usize) -> Option<u64> {
        <[u64]>::get(self, i).copied()
    }
    #[inline]
    fn first(self) -> Option<u64> {
        <[u64]>::first(self).copied()
    }
    #[inline]
    fn last(self) -> Option<u64> {
        <[u64]>::last(self).copied()
    }
    #[inline]
    fn iter(self) -> impl Iterator<Item = u64> {
        <[u64]>::iter(self).copied()
    }
    #[inline]
    fn clamped(self, start: usize, end: usize) -> Self {
        let end = end.min(<[u64]>::len(self));
        <[u64]>::get(self, start.min(end)..end).unwrap_or(&[])
    }
}

impl Words for U64Array<'_> {
    #[inline]
    fn len(self) -> usize {
        U64Array::len(&self)
    }
    #[inline]
    fn get(self, i: usize) -> Option<u64> {
        U64Array::get(&self, i)
    }
    #[inline]
    fn first(self) -> Option<u64> {
        U64Array::get(&self, 0)
    }
    #[inline]
    fn last(self) -> Option<u64> {
        U64Array::get(&self, U64Array::len(&self).checked_sub(1)?)
    }
    #[inline]
    fn iter(self) -> impl Iterator<Item = u64> {
        U64Array::iter(&self)
    }
    #[inline]
    fn clamped(self, start: usize, end: usize) -> Self {
        self.slice(start, end)
    }
}

/// A `pos_L` entry `v` as a node index of a level with `n` nodes, clamped to
/// `n`: `min(v, n)`, and `n` when `v` does not fit a `usize`.
///
/// On valid data (`pos_L[p] <= n_L`, storage invariants 2 and 3) this is `v`
/// itself; on data that breaks them it is what keeps every child slice inside
/// `crd_L` (the totality promise of the crate docs). csf-core's accessors and
/// csf-validate's invariant checks clamp with this one function, so that both
/// walk the same slices.
#[inline]
pub fn clamp_index(v: u64, n: usize) -> usize {
    usize::try_from(v).map_or(n, |v| v.min(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_and_byte_wise_words_read_the_same() {
        let native: &[u64] = &[3, 5, 8, 13];
        let bytes: Vec<u8> = native.iter().flat_map(|w| w.to_le_bytes()).collect();
        let le = U64Array::new(&bytes).unwrap();
        /// What each method reads, as `u64`s (`u64::MAX` for `None` or `true`).
        fn all<W: Words>(w: W) -> Vec<u64> {
            let none = |v: Option<u64>| v.unwrap_or(u64::MAX);
            let mut out = vec![
                w.len() as u64,
                u64::from(w.is_empty()),
                none(w.get(2)),
                none(w.first()),
                none(w.last()),
            ];
            out.extend(w.clamped(1, 3).iter());
            out.extend(w.clamped(3, 99).iter().chain(w.clamped(3, 1).iter()));
            out
        }
        assert_eq!(all(native), all(le));
        assert_eq!(all(native), [4, 0, 8, 3, 13, 5, 8, 13]);
        let empty: &[u64] = &[];
        assert_eq!((Words::first(empty), Words::last(empty), Words::get(empty, 0)), (None, None, None));
        assert_eq!((U64Array::EMPTY.last(), Words::get(le, usize::MAX)), (None, None));
    }

    #[test]
    fn clamp_index_keeps_entries_inside_the_level() {
        assert_eq!(clamp_index(2, 5), 2);
        assert_eq!(clamp_index(5, 5), 5);
        assert_eq!(clamp_index(6, 5), 5);
        assert_eq!(clamp_index(u64::MAX, 5), 5);
    }
}
