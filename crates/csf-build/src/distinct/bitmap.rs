//! Bitmaps of dense sets: a bit per cell.

use std::ops::Range;

use super::{dims_of, project, Dims};
use crate::{Indices, Source};

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
            5 => self.fill_with::<5>(source, range),
            6 => self.fill_with::<6>(source, range),
            7 => self.fill_with::<7>(source, range),
            8 => self.fill_with::<8>(source, range),
            _ => self.fill_with::<0>(source, range),
        }
    }

    /// `fill` for sets of `N` dimensions (`N = 0`: any number). With `N`
    /// fixed, the coordinates are read straight from the rows or the
    /// columns, each column cut to the range once (no copy of an entry's
    /// coordinates and no bounds check per entry).
    fn fill_with<const N: usize>(&mut self, source: &Source<'_>, range: Range<usize>) {
        let (strides, words) = (&self.strides, &mut self.words);
        let mut set = |cell: u64| {
            let cell = cell as usize;
            words[cell >> 6] |= 1 << (cell & 63);
        };
        if N == 0 {
            let k = self.dims.len();
            return project(source, &self.dims, range, |_, c| set((0..k).map(|i| c[i] * strides[i]).sum()));
        }
        let dims: [usize; N] = std::array::from_fn(|i| self.dims[i]);
        if let Some(packed) = source.packed {
            for &key in &packed.keys[range] {
                set((0..N).map(|i| packed.coord_of(key, dims[i]) * strides[i]).sum());
            }
            return;
        }
        match source.indices {
            Indices::RowMajor(flat) => {
                let rank = source.shape.len();
                for row in flat[range.start * rank..range.end * rank].chunks_exact(rank) {
                    set((0..N).map(|i| row[dims[i]] * strides[i]).sum());
                }
            }
            Indices::Columnar(cols) => {
                let cols: [&[u64]; N] = std::array::from_fn(|i| &cols[dims[i]][range.clone()]);
                // (An index into every column, which an iterator over one cannot give.)
                #[allow(clippy::needless_range_loop)]
                for entry in 0..range.len() {
                    set((0..N).map(|i| cols[i][entry] * strides[i]).sum());
                }
            }
        }
    }
}

impl Bitmap {
    /// The number of set bits: `D` of the set.
    pub(super) fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Rows of the innermost dimension's cells (`cells / extent`), the
    /// work of a `project`; 0 without dimensions or cells.
    pub(super) fn rows(shape: &[u64], set: Dims) -> u64 {
        let inner = dims_of(set).last().map_or(0, |d| shape[d]);
        let cells = dims_of(set).map(|d| shape[d]).fold(1, u64::saturating_mul);
        cells.checked_div(inner).unwrap_or(0)
    }

    /// The word operations of a `project` from `set`'s bitmap: rows times
    /// the words a row spans.
    pub(super) fn row_words(shape: &[u64], set: Dims) -> u64 {
        let inner = dims_of(set).last().map_or(0, |d| shape[d]);
        Self::rows(shape, set).saturating_mul(inner.div_ceil(64))
    }

    /// The bitmap of a set `sub` within this one, from the bits: row by row
    /// of the innermost dimension (the last of the set), each row ORed into
    /// `sub`'s bitmap when `sub` holds that dimension, else a bit for "any".
    pub(super) fn project(&self, shape: &[u64], sub: Dims) -> Bitmap {
        debug_assert!(sub & !self.set == 0 && sub != 0);
        let (&inner, outer) = self.dims.split_last().expect("a set has dimensions");
        let extent = shape[inner];
        let mut into = Bitmap::new(shape, sub);
        let rows = Self::rows(shape, self.set);
        if sub == self.set & !(1 << inner) {
            // Every outer dimension kept (a prefix set from the next longer
            // one): row `r` is cell `r` of `sub`, no odometer needed.
            for row in (0..rows).filter(|&row| any_in(&self.words, row * extent, extent)) {
                into.words[(row >> 6) as usize] |= 1 << (row & 63);
            }
            return into;
        }
        // `sub`'s stride of each outer dimension (0 where it has none).
        let strides: Vec<u64> = {
            let mut position = 0;
            outer
                .iter()
                .map(|&d| {
                    let held = sub >> d & 1 == 1;
                    position += usize::from(held);
                    if held {
                        into.strides[position - 1]
                    } else {
                        0
                    }
                })
                .collect()
        };
        let keeps_inner = sub >> inner & 1 == 1;
        let mut digits = vec![0u64; outer.len()];
        for row in 0..rows {
            let base: u64 = digits.iter().zip(&strides).map(|(d, s)| d * s).sum();
            let from = row * extent;
            if keeps_inner {
                or_range(&mut into.words, base, &self.words, from, extent);
            } else if any_in(&self.words, from, extent) {
                into.words[(base >> 6) as usize] |= 1 << (base & 63);
            }
            // The next row: the odometer over the outer dimensions.
            for (digit, &d) in digits.iter_mut().zip(outer).rev() {
                *digit += 1;
                if *digit < shape[d] {
                    break;
                }
                *digit = 0;
            }
        }
        into
    }
}

/// The `len <= 64` bits of `words` from bit `start`.
fn bits_at(words: &[u64], start: u64, len: u64) -> u64 {
    let (word, offset) = ((start >> 6) as usize, (start & 63) as u32);
    let mut bits = words[word] >> offset;
    if u64::from(offset) + len > 64 {
        bits |= words[word + 1] << (64 - offset);
    }
    bits & u64::MAX >> (64 - len)
}

/// Whether any of the `len` bits of `words` from bit `start` is set.
fn any_in(words: &[u64], start: u64, len: u64) -> bool {
    (0..len).step_by(64).any(|at| bits_at(words, start + at, (len - at).min(64)) != 0)
}

/// ORs the `len` bits of `from` at bit `start` into `into` at bit `at`.
fn or_range(into: &mut [u64], at: u64, from: &[u64], start: u64, len: u64) {
    for step in (0..len).step_by(64) {
        let bits = bits_at(from, start + step, (len - step).min(64));
        let (word, offset) = (((at + step) >> 6) as usize, ((at + step) & 63) as u32);
        into[word] |= bits << offset;
        if offset > 0 && u64::from(offset) + (len - step).min(64) > 64 {
            into[word + 1] |= bits >> (64 - offset);
        }
    }
}
