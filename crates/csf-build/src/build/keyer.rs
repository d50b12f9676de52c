//! The keys of the radix path, made straight from the input.

use std::ops::Range;

use hurray_format::limits::MAX_RANK;

use super::BuildJob;
use crate::key::Key;
use crate::sort::KeySource;
use crate::Indices;

/// Makes the keys straight from the input, for the sort (see `sort.rs`).
pub(super) struct Keyer<'j> {
    job: &'j BuildJob<'j>,
    /// Per level: the logical dimension.
    dims: [usize; MAX_RANK],
}

impl<'j> Keyer<'j> {
    pub(super) fn new(job: &'j BuildJob<'j>) -> Self {
        let mut keyer = Self { job, dims: [0; MAX_RANK] };
        for (level, &dim) in job.mode_order.iter().enumerate() {
            keyer.dims[level] = dim as usize;
        }
        keyer
    }

    /// Runs `f(key, entry)` over the kept entries of `range`, with keys from
    /// their first `levels` levels (see `Layout::pack`), and says whether every
    /// coordinate read was inside the shape.
    #[inline(always)]
    fn each<K: Key>(&self, range: Range<usize>, levels: usize, f: impl FnMut(K, usize)) -> bool {
        // The common numbers of levels as constants (one, for the counting
        // pass's top digit, and the whole key at ranks 3 and 4).
        match levels {
            1 => self.each_with::<K, 1>(range, levels, f),
            3 => self.each_with::<K, 3>(range, levels, f),
            4 => self.each_with::<K, 4>(range, levels, f),
            _ => self.each_with::<K, 0>(range, levels, f),
        }
    }

    /// `each` for `N` levels (0: `levels`).
    #[inline(always)]
    fn each_with<K: Key, const N: usize>(
        &self,
        range: Range<usize>,
        levels: usize,
        mut f: impl FnMut(K, usize),
    ) -> bool {
        let drop_zeros = self.job.options.drop_zeros;
        let layout = &self.job.layout;
        let mut ok = true;
        // One loop per layout, so that the coordinate lookup inlines.
        match self.job.source.indices {
            Indices::RowMajor(flat) => {
                let rank = self.job.layout.rank;
                let rows = flat[range.start * rank..range.end * rank].chunks_exact(rank);
                for (entry, row) in range.zip(rows) {
                    // Bounds first: a coordinate outside the shape is an
                    // input error even on an entry that is dropped as zero.
                    let (key, in_bounds) = layout.pack::<K, N>(levels, |l| row[self.dims[l]]);
                    ok &= in_bounds;
                    if drop_zeros && !self.job.keep(entry) {
                        continue;
                    }
                    f(key, entry);
                }
            }
            Indices::Columnar(cols) => {
                // The range of each level's column, sliced once: one load per
                // coordinate, not two and two bounds checks.
                let mut by_level: [&[u64]; MAX_RANK] = [&[]; MAX_RANK];
                for (level, column) in by_level.iter_mut().enumerate().take(levels) {
                    *column = &cols[self.dims[level]][range.clone()];
                }
                let start = range.start;
                for entry in range {
                    // Bounds first: a coordinate outside the shape is an
                    // input error even on an entry that is dropped as zero.
                    let (key, in_bounds) = layout.pack::<K, N>(levels, |l| by_level[l][entry - start]);
                    ok &= in_bounds;
                    if drop_zeros && !self.job.keep(entry) {
                        continue;
                    }
                    f(key, entry);
                }
            }
        }
        ok
    }
}

impl<K: Key> KeySource<K> for Keyer<'_> {
    fn entries(&self) -> usize {
        self.job.source.len
    }

    fn keys(&self, range: Range<usize>, f: impl FnMut(K, usize)) -> bool {
        self.each(range, self.job.layout.rank, f)
    }

    fn prefixes(&self, range: Range<usize>, from: u32, mut f: impl FnMut(K)) {
        // Only the levels whose fields reach bit `from` or above: the top
        // level alone on most shapes, a third of the work of a whole key.
        let layout = &self.job.layout;
        let levels = (0..layout.rank).find(|&l| layout.shift[l] <= from).map_or(layout.rank, |l| l + 1);
        self.each(range, levels, |k, _| f(k));
    }
}
