//! Bitmaps of dense sets: a bit per cell.

use std::ops::Range;

use super::{dims_of, project, Dims};
use crate::Source;

/// A dense set's bitmap: a bit per cell, the cell of an entry in mixed
/// radix (exact whatever the extents).
pub(super) struct Bitmap {
    pub(super) set: Dims,
    dims: Vec<usize>,
    strides: [u64; 64],
    pub(super) words: Vec<u64>,
}

impl Bitmap {
    pub(super) fn new(shape: &[u64], set: Dims) -> Self {
        let dims: Vec<usize> = dims_of(set).collect();
        // A dense set's cells fit `u64`, but with an extent of 0 (and so no
        // entries) a partial product of the others may not: saturate, the
        // strides are then never used.
        let product = |dims: &[usize]| dims.iter().map(|&d| shape[d]).fold(1, u64::saturating_mul);
        let mut strides = [0u64; 64];
        for (i, stride) in strides.iter_mut().enumerate().take(dims.len()) {
            *stride = product(&dims[i + 1..]);
        }
        let cells = product(&dims);
        Self { set, dims, strides, words: vec![0u64; cells.div_ceil(64) as usize] }
    }

    /// Sets the bits of the entries of `range`.
    pub(super) fn fill(&mut self, source: &Source<'_>, range: Range<usize>) {
        // Fixed widths for the common sizes: the loop over dimensions unrolls.
        match self.dims.len() {
            1 => self.fill_with::<1>(source, range),
            2 => self.fill_with::<2>(source, range),
            3 => self.fill_with::<3>(source, range),
            4 => self.fill_with::<4>(source, range),
            _ => self.fill_with::<0>(source, range),
        }
    }

    /// `fill` for sets of `N` dimensions (`N = 0`: any number).
    fn fill_with<const N: usize>(&mut self, source: &Source<'_>, range: Range<usize>) {
        let k = if N == 0 { self.dims.len() } else { N };
        let (strides, words) = (&self.strides, &mut self.words);
        project(source, &self.dims, range, |_, c| {
            let cell = (0..k).map(|i| c[i] * strides[i]).sum::<u64>() as usize;
            words[cell >> 6] |= 1 << (cell & 63);
        });
    }
}
