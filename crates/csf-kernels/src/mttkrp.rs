//! MTTKRP: the matricized tensor times the Khatri-Rao product of the other
//! factors, `M(i_n, :) = sum over the non-zeros x(i_1..i_N) of
//! x * (hadamard of U_m(i_m, :) for m != n)`.
//!
//! # The algorithm (SPLATT's CSF kernels, one tree, any level)
//!
//! Let `d` be the level of the tree that stores mode `n`. A walk over the
//! tree carries two kinds of length-`R` rows:
//!
//! - *above* `d`, the product of the factor rows on the path from the root
//!   (`prefix`), one Hadamard product per node;
//! - *below* `d`, the sum over a node's sub-tree of `value * product of the
//!   factor rows from the node down` (`gather`): one `axpy` per leaf, one
//!   Hadamard multiply-add per internal node.
//!
//! At each node of level `d` the output row of its coordinate gains
//! `prefix .* gather(children)`. So every non-zero costs `R` multiply-adds
//! at the leaf, and each internal node's work is shared by its whole
//! sub-tree: the root case (`d = 0`) touches `R` elements per leaf and per
//! fibre, the leaf case (`d = N - 1`) one scattered `axpy` per leaf.
//!
//! # Threads
//!
//! The root nodes are cut into one contiguous part per thread, with about
//! as many leaves each. Parts of the root case write disjoint output rows on
//! valid data (a root coordinate appears once) but the kernels stay safe
//! without that promise: each part adds into a private buffer over the span
//! of rows its roots name. For `d > 0` several parts may write the same row;
//! each part but the first accumulates into a private copy of the output
//! (`(threads - 1) x I_n x R` elements), and the copies are added in part
//! order. The sums are therefore the same for a given thread count, run
//! after run; different thread counts add in different orders.

use alloc::vec;
#[cfg(feature = "parallel")]
use alloc::vec::Vec;

#[cfg(feature = "parallel")]
use crate::matrix::zeroed;
use crate::matrix::{MatRef, Matrix};
use crate::scalar::{axpy, hadamard, hadamard_add, row_of, row_of_mut, Scalar};
use crate::simd::{prefetch, Isa};

/// How many leaves ahead the walks prefetch a factor or output row.
const PREFETCH_DISTANCE: usize = 8;

/// Rows are prefetched only from matrices larger than this (bytes): a
/// smaller one stays in the cache, where the prefetches only cost
/// instructions (10% on the uniform 2000^3 tensor's root mode; the
/// power-law tensor's 64 MiB factor gained 1.7 to 2.7 times).
const PREFETCH_ABOVE: usize = 1 << 20;

/// Whether `matrix` is large enough to prefetch from.
#[inline(always)]
fn large<T>(matrix: &[T]) -> bool {
    core::mem::size_of_val(matrix) > PREFETCH_ABOVE
}
use crate::tensor::{children, Tensor, Tree};
use crate::KernelError;

/// One level of a walk: its arrays and the factor matrix of its mode.
#[derive(Clone, Copy)]
pub(crate) struct Level<'t, T> {
    pub(crate) pos: &'t [u64],
    pub(crate) crd: &'t [u64],
    pub(crate) factor: &'t [T],
}

/// A walk's levels (level 0 first), the leaf values and the rank `R`.
#[derive(Clone, Copy)]
pub(crate) struct Walk<'t, T> {
    pub(crate) levels: &'t [Level<'t, T>],
    pub(crate) values: &'t [T],
    pub(crate) r: usize,
}

impl<T: Scalar> Walk<'_, T> {
    /// `R`: the const parameter when the walk is specialised for it (the
    /// rows then have a length known at compile time: unrolled loops, the
    /// accumulators in registers), else the run-time rank.
    #[inline(always)]
    fn width<const R: usize>(&self) -> usize {
        if R == 0 {
            self.r
        } else {
            R
        }
    }

    /// The sum over the leaves `a..b` of `value * row(crd)`, for a
    /// specialised width: returned by value, it stays in registers.
    #[inline(always)]
    fn leaf_array<const R: usize>(&self, level: &Level<'_, T>, (a, b): (usize, usize)) -> [T; R] {
        let crd = level.crd.get(a..b).unwrap_or(&[]);
        let values = self.values.get(a..b.min(self.values.len())).unwrap_or(&[]);
        let mut local = [T::ZERO; R];
        let prefetching = large(level.factor);
        for (k, (&c, &v)) in crd.iter().zip(values).enumerate() {
            // The row of a leaf a few ahead (in this fibre or the next):
            // rows are read in no order the hardware can guess.
            if prefetching {
                if let Some(&ahead) = level.crd.get(a + k + PREFETCH_DISTANCE) {
                    prefetch(level.factor, (ahead as usize).wrapping_mul(R), R);
                }
            }
            if let Some(row) = row_of(level.factor, c, R) {
                axpy(&mut local, v, row);
            }
        }
        local
    }

    /// `acc += sum over the leaves a..b of value * row(crd)`.
    #[inline(always)]
    fn leaf_sum<const R: usize>(&self, level: &Level<'_, T>, (a, b): (usize, usize), acc: &mut [T]) {
        let r = self.width::<R>();
        let crd = level.crd.get(a..b).unwrap_or(&[]);
        let values = self.values.get(a..b.min(self.values.len())).unwrap_or(&[]);
        if R == 0 {
            for (&c, &v) in crd.iter().zip(values) {
                if let Some(row) = row_of(level.factor, c, r) {
                    axpy(acc, v, row);
                }
            }
            return;
        }
        // A local array of constant length: the compiler keeps it in
        // registers across the loop (a slice's elements are stored back
        // at every leaf).
        let mut local = [T::ZERO; R];
        for (&c, &v) in crd.iter().zip(values) {
            if let Some(row) = row_of(level.factor, c, R) {
                axpy(&mut local, v, row);
            }
        }
        crate::scalar::add(acc, &local);
    }

    /// `acc += sum over nodes a..b of levels[0] of row(crd) .* gather(children)`
    /// (the leaf level: `value * row(crd)`). `scratch` holds `R` elements per
    /// level below (unused when `R` is a specialised width).
    #[inline(always)]
    pub(crate) fn gather<V: Isa, const R: usize>(
        &self,
        isa: V,
        levels: &[Level<'_, T>],
        (a, b): (usize, usize),
        acc: &mut [T],
        scratch: &mut [T],
    ) {
        let r = self.width::<R>();
        let Some((level, below)) = levels.split_first() else { return };
        let Some((next, further)) = below.split_first() else {
            self.leaf_sum::<R>(level, (a, b), acc);
            return;
        };
        let crd = level.crd.get(a..b).unwrap_or(&[]);
        let acc = acc.get_mut(..r).unwrap_or(&mut []);
        if R != 0 && further.is_empty() {
            // The fibres of leaves: each one's sum, and their total, in
            // local arrays (registers; `acc` is written once).
            let mut total = [T::ZERO; R];
            for (j, &c) in (a..b).zip(crd) {
                let sum = self.leaf_array::<R>(next, children(next.pos, next.crd.len(), j));
                if let Some(row) = row_of(level.factor, c, R) {
                    hadamard_add(&mut total, &sum, row);
                }
            }
            crate::scalar::add(acc, &total);
            return;
        }
        let mut local = [T::ZERO; R];
        let (tmp, rest) =
            if R == 0 { scratch.split_at_mut(r.min(scratch.len())) } else { (&mut local[..], scratch) };
        for (j, &c) in (a..b).zip(crd) {
            let range = children(next.pos, next.crd.len(), j);
            tmp.fill(T::ZERO);
            if further.is_empty() {
                self.leaf_sum::<R>(next, range, tmp);
            } else {
                isa.gather::<T, R>(self, below, range, tmp, rest);
            }
            if let Some(row) = row_of(level.factor, c, r) {
                hadamard_add(acc, tmp, row);
            }
        }
    }

    /// Walks nodes `a..b` of `levels[0]` down to the output level, `depth`
    /// levels further, carrying `prefix` (the product of the factor rows
    /// above; `None` at the root), and adds into `out`'s rows.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn descend<V: Isa, const R: usize>(
        &self,
        isa: V,
        levels: &[Level<'_, T>],
        depth: usize,
        (a, b): (usize, usize),
        prefix: Option<&[T]>,
        out: &mut Output<'_, T>,
        scratch: &mut [T],
    ) {
        let r = self.width::<R>();
        let Some((level, below)) = levels.split_first() else { return };
        let crd = level.crd.get(a..b).unwrap_or(&[]);
        let mut local = [T::ZERO; R];
        let (tmp, rest) =
            if R == 0 { scratch.split_at_mut(r.min(scratch.len())) } else { (&mut local[..], scratch) };
        if depth == 0 {
            match below.first() {
                None => {
                    let values = self.values.get(a..b.min(self.values.len())).unwrap_or(&[]);
                    let prefix = prefix.and_then(|p| p.get(..r)).unwrap_or(&[]);
                    let prefetching = large(out.data);
                    for (k, (&c, &v)) in crd.iter().zip(values).enumerate() {
                        if prefetching {
                            if let Some(&ahead) = level.crd.get(a + k + PREFETCH_DISTANCE) {
                                out.prefetch(ahead, r);
                            }
                        }
                        if let Some(dst) = out.row(c, r) {
                            axpy(dst, v, prefix);
                        }
                    }
                }
                Some(next) if R != 0 && below.len() == 1 => {
                    // The output level is just above the leaves.
                    for (j, &c) in (a..b).zip(crd) {
                        let sum = self.leaf_array::<R>(next, children(next.pos, next.crd.len(), j));
                        if let Some(dst) = out.row(c, r) {
                            match prefix {
                                Some(p) => hadamard_add(dst, &sum, p),
                                None => crate::scalar::add(dst, &sum),
                            }
                        }
                    }
                }
                Some(next) => {
                    for (j, &c) in (a..b).zip(crd) {
                        let range = children(next.pos, next.crd.len(), j);
                        tmp.fill(T::ZERO);
                        isa.gather::<T, R>(self, below, range, tmp, rest);
                        if let Some(dst) = out.row(c, r) {
                            match prefix {
                                Some(p) => hadamard_add(dst, tmp, p),
                                None => crate::scalar::add(dst, tmp),
                            }
                        }
                    }
                }
            }
            return;
        }
        let Some(next) = below.first() else { return };
        for (j, &c) in (a..b).zip(crd) {
            let Some(row) = row_of(level.factor, c, r) else { continue };
            match prefix {
                Some(p) => hadamard(tmp, p, row),
                None => tmp.copy_from_slice(row),
            }
            let range = children(next.pos, next.crd.len(), j);
            isa.descend::<T, R>(self, below, depth - 1, range, Some(tmp), out, rest);
        }
    }
}

/// One part's walk: the arguments of [`Walk::descend`] from the root.
pub(crate) struct Descend<'c, 'w, 'o, T> {
    pub(crate) walk: &'c Walk<'w, T>,
    pub(crate) depth: usize,
    pub(crate) range: (usize, usize),
    pub(crate) out: &'c mut Output<'o, T>,
    pub(crate) scratch: &'c mut [T],
}

impl<T: Scalar> Descend<'_, '_, '_, T> {
    /// Runs the walk with the instructions of `isa`, the rank `R` a
    /// constant (0: the run-time rank).
    #[inline(always)]
    pub(crate) fn run<V: Isa, const R: usize>(self, isa: V) {
        let Descend { walk, depth, range, out, scratch } = self;
        isa.descend::<T, R>(walk, walk.levels, depth, range, None, out, scratch);
    }
}

/// Where a part's output rows go: the whole output, or a private span of
/// rows `first..first + len`.
pub(crate) struct Output<'o, T> {
    data: &'o mut [T],
    first: u64,
}

impl<T> Output<'_, T> {
    /// The row of `coordinate`, `r` long: the caller passes the walk's
    /// width, a constant in a specialised walk (so loops over the row unroll).
    /// [`prefetch`] of the row of `coordinate`.
    #[inline(always)]
    fn prefetch(&self, coordinate: u64, r: usize) {
        let row = coordinate.wrapping_sub(self.first) as usize;
        prefetch(self.data, row.wrapping_mul(r), r);
    }

    #[inline(always)]
    fn row(&mut self, coordinate: u64, r: usize) -> Option<&mut [T]> {
        let row = coordinate.checked_sub(self.first)?;
        row_of_mut(self.data, row, r)
    }
}

impl<T: Scalar> Tensor<'_, T> {
    /// MTTKRP for `mode`: the `I_mode x R` matrix `X_(mode) (U_N ⊙ ... ⊙ U_1)`
    /// (the Khatri-Rao product of every factor but `factors[mode]`, which
    /// is not read). `factors[m]` is `I_m x R`, the same `R` for all.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F64, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// use csf_kernels::{Matrix, Tensor};
    /// // The spec's example: x(0,0,1) = 1, x(0,2,3) = 2, x(1,1,0) = 3, x(1,1,2) = 4, shape [2, 3, 4].
    /// let tensor = Tensor::<f64>::new(&view)?;
    /// let ones = |rows| Matrix::from_rows(rows, 1, vec![1.0; rows]);
    /// let (a, b, c) = (ones(2)?, ones(3)?, ones(4)?);
    /// // With all-ones factors, MTTKRP sums the values of each slice.
    /// let m = tensor.mttkrp(&[a.as_ref(), b.as_ref(), c.as_ref()], 1)?;
    /// assert_eq!(m.as_slice(), &[1.0, 7.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`KernelError::BadMode`], [`KernelError::FactorCount`] or
    /// [`KernelError::FactorShape`].
    pub fn mttkrp(&self, factors: &[MatRef<'_, T>], mode: usize) -> Result<Matrix<T>, KernelError> {
        let r = self.check_factors(factors, mode)?;
        let rows = self.extents()?.get(mode).copied().unwrap_or(0);
        let mut out = Matrix::zeros(rows, r)?;
        self.mttkrp_into(factors, mode, out.as_mut_slice())?;
        Ok(out)
    }

    /// [`Tensor::mttkrp`] into `out` (`I_mode x R`, row-major), which it
    /// overwrites: no allocation on one thread (CP-ALS reuses one output per mode).
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F64, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// use csf_kernels::{Matrix, Tensor};
    /// let tensor = Tensor::<f64>::new(&view)?; // x(0,0,1)=1, x(0,2,3)=2, x(1,1,0)=3, x(1,1,2)=4
    /// let ones = |rows| Matrix::from_rows(rows, 1, vec![1.0; rows]);
    /// let (a, b, c) = (ones(2)?, ones(3)?, ones(4)?);
    /// let mut out = vec![f64::NAN; 4]; // mode 2: I_2 x R = 4 x 1, overwritten
    /// tensor.mttkrp_into(&[a.as_ref(), b.as_ref(), c.as_ref()], 2, &mut out)?;
    /// assert_eq!(out, [3.0, 1.0, 4.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::mttkrp`], and [`KernelError::OutputLength`].
    pub fn mttkrp_into(
        &self,
        factors: &[MatRef<'_, T>],
        mode: usize,
        out: &mut [T],
    ) -> Result<(), KernelError> {
        let r = self.check_factors(factors, mode)?;
        let rows = self.extents()?.get(mode).copied().unwrap_or(0);
        let expected = rows.checked_mul(r).ok_or(KernelError::TooLarge { what: "output", rows, cols: r })?;
        if out.len() != expected {
            return Err(KernelError::OutputLength { len: out.len(), expected });
        }
        out.fill(T::ZERO);
        let Some(tree) = self.tree_for(mode) else { return Ok(()) };
        let levels = tree.levels(factors);
        let depth = tree.depth.get(mode).copied().unwrap_or(0);
        let walk = Walk { levels: &levels, values: &tree.values, r };
        let threads = self.threads(tree, if depth == 0 { 0 } else { rows });
        run(threads, &walk, tree, depth, out)
    }

    /// The thread count for a walk of `tree`: rayon's, when parallel and
    /// there is enough work to share: at least 2^18 leaves, and at least
    /// four per row of a private copy of the output (`private_rows`, 0 when
    /// there is none), which every thread but one zeroes and adds back.
    pub(crate) fn threads(&self, tree: &Tree<'_, T>, private_rows: usize) -> usize {
        #[cfg(feature = "parallel")]
        if self.parallel && tree.leaves() >= 1 << 18 && tree.leaves() / 4 >= private_rows {
            return rayon::current_num_threads().max(1);
        }
        let _ = (tree, private_rows);
        1
    }

    /// Checks the factor matrices against the shape; returns `R`.
    pub(crate) fn check_factors(&self, factors: &[MatRef<'_, T>], mode: usize) -> Result<usize, KernelError> {
        let rank = self.rank();
        if mode >= rank {
            return Err(KernelError::BadMode { mode, rank });
        }
        if factors.len() != rank {
            return Err(KernelError::FactorCount { given: factors.len(), rank });
        }
        let r = factors.first().map_or(0, MatRef::cols);
        for (m, (f, &extent)) in factors.iter().zip(&self.shape).enumerate() {
            if f.cols() != r || f.rows() as u64 != extent {
                return Err(KernelError::FactorShape {
                    mode: m,
                    rows: f.rows(),
                    cols: f.cols(),
                    expected_rows: extent,
                    expected_cols: r,
                });
            }
        }
        Ok(r)
    }
}

/// The walk over the whole tree on `threads` threads, into `out` (zeroed).
fn run<T: Scalar>(
    threads: usize,
    walk: &Walk<'_, T>,
    tree: &Tree<'_, T>,
    depth: usize,
    out: &mut [T],
) -> Result<(), KernelError> {
    let r = walk.r;
    let roots = tree.crd.first().map_or(0, |c| c.len());
    let scratch_len = r * (walk.levels.len() + 1);
    let part = |(a, b): (usize, usize), data: &mut [T], first: u64| {
        let mut scratch = vec![T::ZERO; scratch_len];
        let mut output = Output { data, first };
        let call = Descend { walk, depth, range: (a, b), out: &mut output, scratch: &mut scratch };
        match r {
            8 => crate::simd::descend::<T, 8>(call),
            16 => crate::simd::descend::<T, 16>(call),
            32 => crate::simd::descend::<T, 32>(call),
            _ => crate::simd::descend::<T, 0>(call),
        }
    };
    if threads <= 1 || roots < 2 {
        part((0, roots), out, 0);
        return Ok(());
    }
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        let parts = tree.partition(threads);
        let root_crd: &[u64] = tree.crd.first().map_or(&[], |c| c);
        // Each part's private rows: for the root case the span of its
        // roots' coordinates, otherwise a whole copy of the output; the
        // first part of the non-root case writes into `out` itself.
        let spans: Vec<(u64, usize)> = parts
            .iter()
            .map(|&(a, b)| {
                if depth == 0 {
                    let coords = root_crd.get(a..b).unwrap_or(&[]);
                    let lo = coords.iter().copied().min().unwrap_or(0);
                    let hi = coords.iter().copied().max().map_or(lo, |h| h.saturating_add(1));
                    let rows_out = (out.len() / r.max(1)) as u64;
                    let hi = hi.min(rows_out).max(lo.min(rows_out));
                    (lo, usize::try_from(hi - lo.min(hi)).unwrap_or(0))
                } else {
                    (0, out.len() / r.max(1))
                }
            })
            .collect();
        // Every private buffer is allocated before the work starts, so
        // that a failed allocation is an error rather than an abort.
        let direct = usize::from(depth != 0);
        let mut buffers: Vec<Vec<T>> = spans
            .iter()
            .skip(direct)
            .map(|&(_, rows)| zeroed(rows.saturating_mul(r), "MTTKRP's per-thread rows"))
            .collect::<Result<_, _>>()?;
        let (Some(private_parts), Some(private_spans)) = (parts.get(direct..), spans.get(direct..)) else {
            return Ok(());
        };
        let fill = |buffers: &mut Vec<Vec<T>>| {
            buffers
                .par_iter_mut()
                .zip(private_parts)
                .zip(private_spans)
                .for_each(|((data, &range), &(first, _))| part(range, data, first));
        };
        match parts.first() {
            // The first part of the non-root case writes into `out` itself
            // while the others fill their private copies.
            Some(&first) if direct == 1 => {
                rayon::join(|| part(first, out, 0), || fill(&mut buffers));
            }
            _ => fill(&mut buffers),
        }
        add_in_order(out, &buffers, private_spans, r);
    }
    Ok(())
}

/// `out[rows of span p] += buffers[p]`, part after part, rows in parallel.
#[cfg(feature = "parallel")]
fn add_in_order<T: Scalar>(out: &mut [T], buffers: &[Vec<T>], spans: &[(u64, usize)], r: usize) {
    use rayon::prelude::*;
    const ROWS: usize = 1024;
    let chunk = (ROWS * r).max(1);
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, dst)| {
        let start = i * chunk;
        for (buffer, &(first, _)) in buffers.iter().zip(spans) {
            if buffer.is_empty() {
                continue;
            }
            // The overlap of this chunk with the buffer's rows.
            let Ok(offset) = usize::try_from(first) else { continue };
            let Some(b_start) = offset.checked_mul(r) else { continue };
            let b_end = b_start.saturating_add(buffer.len());
            let lo = start.max(b_start);
            let hi = (start + dst.len()).min(b_end);
            if lo >= hi {
                continue;
            }
            if let (Some(d), Some(s)) =
                (dst.get_mut(lo - start..hi - start), buffer.get(lo - b_start..hi - b_start))
            {
                crate::scalar::add(d, s);
            }
        }
    });
}
