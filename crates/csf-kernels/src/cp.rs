//! CP-ALS: the canonical polyadic decomposition by alternating least squares.
//!
//! The algorithm of the Tensor Toolbox's `cp_als` (and pyttb's, SPLATT's):
//! each iteration updates every factor in turn from the normal equations
//!
//! ```text
//! U_n <- MTTKRP(X, U, n) * V^-1,   V = hadamard of U_m^T U_m over m != n
//! ```
//!
//! then normalises `U_n`'s columns into the weights (their 2-norms on the
//! first iteration, `max(1, max |column|)` afterwards, so that the weights
//! do not shrink to zero), and measures the fit `1 - ||X - P|| / ||X||` of
//! the Kruskal tensor `P = [[weights; U_1 .. U_N]]` without forming it:
//! `||X - P||^2 = ||X||^2 + ||P||^2 - 2 <X, P>`, with `||P||^2` from the
//! Gram matrices and `<X, P>` from the last mode's MTTKRP. It stops when
//! the fit changes by less than `tol` or after `max_iters` iterations.
//! At the end the columns are scaled to unit 2-norm, the weights sorted in
//! decreasing order, and the signs fixed (the largest-magnitude entry of
//! each column made positive, in pairs so the tensor is unchanged), as
//! the Tensor Toolbox's `arrange` and `fixsigns` do.
//!
//! The `R x R` work (the Gram matrices, `V`'s inverse) is done in `f64`
//! with nalgebra: a Cholesky factorisation, LU when `V` is not positive
//! definite to working precision, and the SVD's pseudo-inverse when it is
//! singular. nalgebra is the well-kept, `no_std`-capable choice for small
//! dense matrices; faer is faster on large ones, which this never has.

use alloc::vec;
use alloc::vec::Vec;

use nalgebra::DMatrix;

use crate::matrix::{MatRef, Matrix};
use crate::ops::{abs, sqrt};
use crate::rng::SplitMix64;
use crate::scalar::Scalar;
use crate::tensor::Tensor;
use crate::KernelError;

/// How CP-ALS starts.
#[derive(Clone, Debug, PartialEq)]
pub enum CpInit<T> {
    /// Every factor entry uniform in `[0, 1)` from SplitMix64 seeded with
    /// `seed` (mode 0's, then mode 1's, ..., row by row); the same factors
    /// on every platform.
    Random {
        /// The seed.
        seed: u64,
    },
    /// These factors (`I_m x R` each). As in the Tensor Toolbox, the first
    /// mode's is not read: the first update computes it.
    Factors(Vec<Matrix<T>>),
}

/// What CP-ALS computes and when it stops.
#[derive(Clone, Debug, PartialEq)]
pub struct CpOptions<T> {
    /// The number of components `R` (at least 1).
    pub rank: usize,
    /// The most iterations to run (default 50).
    pub max_iters: usize,
    /// Stop once the fit changes by less than this in an iteration
    /// (default `1e-4`, the Tensor Toolbox's).
    pub tol: f64,
    /// The initial factors (default: random with seed 0).
    pub init: CpInit<T>,
}

impl<T> CpOptions<T> {
    /// The defaults, for `rank` components.
    pub fn new(rank: usize) -> Self {
        Self { rank, max_iters: 50, tol: 1e-4, init: CpInit::Random { seed: 0 } }
    }
}

/// One iteration's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationStats {
    /// The iteration, from 1.
    pub iteration: usize,
    /// The fit after it, `1 - ||X - P|| / ||X||`; for a tensor of norm 0
    /// (no non-zero value), `||P||^2 - 2 <X, P>` instead, as the Tensor
    /// Toolbox reports it.
    pub fit: f64,
    /// How much the fit changed (the absolute difference from the previous
    /// iteration's; from 0 for the first).
    pub fit_change: f64,
    /// Its wall-clock seconds (0 without feature `std`).
    pub seconds: f64,
    /// The seconds of each mode's MTTKRP (zeros without feature `std`).
    pub mttkrp_seconds: Vec<f64>,
}

/// A CP decomposition: `X ≈ sum_r weights[r] * U_1(:, r) ∘ ... ∘ U_N(:, r)`.
#[derive(Clone, Debug, PartialEq)]
pub struct CpResult<T> {
    /// The weights (`R`), in decreasing order.
    pub weights: Vec<T>,
    /// The factor matrices, `I_m x R` each, columns of unit 2-norm.
    pub factors: Vec<Matrix<T>>,
    /// Each iteration's fit and timings.
    pub iterations: Vec<IterationStats>,
    /// Whether it stopped on the fit tolerance (rather than `max_iters`).
    pub converged: bool,
}

impl<T> CpResult<T> {
    /// The fit after the last iteration (0 when none ran).
    pub fn fit(&self) -> f64 {
        self.iterations.last().map_or(0.0, |s| s.fit)
    }
}

/// CP-ALS of `tensor`: each iteration updates every factor in turn from the
/// normal equations, `U_n = MTTKRP(X, U, n) V^-1` with `V` the Hadamard
/// product of the other factors' Gram matrices, normalises its columns
/// into the weights (2-norms on the first iteration, `max(1, max |x|)`
/// after), and measures the fit `1 - ||X - P|| / ||X||` without forming
/// `P`; it stops when the fit changes by less than `tol`, or after
/// `max_iters`. The result has columns of unit norm, weights in decreasing
/// order and fixed signs. This is the Tensor Toolbox's `cp_als` (and
/// pyttb's): from the same initial factors, the same fit at every
/// iteration.
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
/// use csf_kernels::{cp_als, CpOptions, Tensor};
/// let tensor = Tensor::<f64>::new(&view)?; // four non-zeros on distinct slices
/// let cp = cp_als(&tensor, &CpOptions { max_iters: 200, tol: 1e-10, ..CpOptions::new(4) })?;
/// assert!(cp.fit() > 0.999, "four rank-one terms fit four entries: {}", cp.fit());
/// assert_eq!((cp.weights.len(), cp.factors[2].rows(), cp.factors[2].cols()), (4, 4, 4));
/// assert!(cp.weights.windows(2).all(|w| w[0] >= w[1]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`KernelError::ZeroRank`], [`KernelError::FactorCount`],
/// [`KernelError::FactorShape`] or [`KernelError::InitRank`] for initial
/// factors that do not fit, [`KernelError::OutOfMemory`] for factors too
/// large to allocate,
/// [`KernelError::NotFinite`] when an update is not finite.
pub fn cp_als<T: Scalar>(tensor: &Tensor<'_, T>, options: &CpOptions<T>) -> Result<CpResult<T>, KernelError> {
    cp_als_with(tensor, options, |_| {})
}

/// [`cp_als`], calling `on_iteration` after each iteration (to print the
/// fit as it goes, say).
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
/// use csf_kernels::{cp_als_with, CpOptions, Tensor};
/// let tensor = Tensor::<f64>::new(&view)?;
/// let mut fits = Vec::new();
/// let cp = cp_als_with(&tensor, &CpOptions::new(2), |s| fits.push(s.fit))?;
/// assert_eq!(fits.len(), cp.iterations.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`cp_als`].
pub fn cp_als_with<T: Scalar>(
    tensor: &Tensor<'_, T>,
    options: &CpOptions<T>,
    mut on_iteration: impl FnMut(&IterationStats),
) -> Result<CpResult<T>, KernelError> {
    let r = options.rank;
    if r == 0 {
        return Err(KernelError::ZeroRank);
    }
    let extents = tensor.extents()?;
    let n_modes = extents.len();
    let mut factors = initial(&extents, options)?;
    {
        let refs: Vec<MatRef<'_, T>> = factors.iter().map(Matrix::as_ref).collect();
        let cols = tensor.check_factors(&refs, 0)?;
        if cols != r {
            return Err(KernelError::InitRank { cols, rank: r });
        }
    }
    let norm_x = tensor.norm();
    let mut grams: Vec<DMatrix<f64>> = factors.iter().map(|f| gram(f, tensor.parallel)).collect();
    let mut weights = vec![1.0f64; r];
    // Each mode's MTTKRP output, allocated once.
    let mut outputs: Vec<Matrix<T>> =
        extents.iter().map(|&rows| Matrix::zeros(rows, r)).collect::<Result<_, _>>()?;
    let mut iterations: Vec<IterationStats> = Vec::new();
    let mut fit = 0.0f64;
    let mut converged = false;
    for iteration in 1..=options.max_iters {
        let clock = Clock::start();
        let mut mttkrp_seconds = vec![0.0; n_modes];
        for n in 0..n_modes {
            let mode_clock = Clock::start();
            {
                let refs: Vec<MatRef<'_, T>> = factors.iter().map(Matrix::as_ref).collect();
                let out = outputs.get_mut(n).map_or(&mut [][..], Matrix::as_mut_slice);
                tensor.mttkrp_into(&refs, n, out)?;
            }
            if let Some(s) = mttkrp_seconds.get_mut(n) {
                *s = mode_clock.seconds();
            }
            let mut v = DMatrix::from_element(r, r, 1.0);
            for (i, g) in grams.iter().enumerate() {
                if i != n {
                    v.component_mul_assign(g);
                }
            }
            let v_inv = inverse(v);
            let (Some(m), Some(updated)) = (outputs.get(n), factors.get_mut(n)) else { continue };
            times_into(m.as_slice(), &v_inv, updated.as_mut_slice(), r, tensor.parallel);
            // Column norms into the weights, in one pass over the rows.
            weights.iter_mut().for_each(|w| *w = if iteration == 1 { 0.0 } else { 1.0 });
            for row in updated.as_slice().chunks_exact(r) {
                for (w, &x) in weights.iter_mut().zip(row) {
                    let x = x.to_f64();
                    *w = if iteration == 1 { *w + x * x } else { w.max(abs(x)) };
                }
            }
            if iteration == 1 {
                weights.iter_mut().for_each(|w| *w = sqrt(*w));
            }
            let scale: Vec<T> =
                weights.iter().map(|&w| T::from_f64(if w == 0.0 { 1.0 } else { 1.0 / w })).collect();
            let mut finite = true;
            for row in updated.as_mut_slice().chunks_exact_mut(r) {
                for (x, &s) in row.iter_mut().zip(&scale) {
                    *x = *x * s;
                    finite &= x.to_f64().is_finite();
                }
            }
            if !finite {
                return Err(KernelError::NotFinite { mode: n, iteration });
            }
            if let Some(g) = grams.get_mut(n) {
                *g = gram(updated, tensor.parallel);
            }
        }
        // ||P||^2 = w^T (hadamard of all Grams) w; <X, P> from the last MTTKRP.
        let mut all = DMatrix::from_element(r, r, 1.0);
        for g in &grams {
            all.component_mul_assign(g);
        }
        let w = nalgebra::DVector::from_column_slice(&weights);
        let norm_p_sq = w.dot(&(&all * &w));
        let last = factors.last().map_or(&[][..], Matrix::as_slice);
        let m_last = outputs.last().map_or(&[][..], Matrix::as_slice);
        let mut inner = 0.0f64;
        for (mrow, urow) in m_last.chunks_exact(r).zip(last.chunks_exact(r)) {
            for ((&a, &b), &wc) in mrow.iter().zip(urow).zip(&weights) {
                inner += a.to_f64() * b.to_f64() * wc;
            }
        }
        let previous = fit;
        fit = if norm_x == 0.0 {
            norm_p_sq - 2.0 * inner
        } else {
            1.0 - sqrt(abs(norm_x * norm_x + norm_p_sq - 2.0 * inner)) / norm_x
        };
        let fit_change = abs(fit - previous);
        let stats = IterationStats { iteration, fit, fit_change, seconds: clock.seconds(), mttkrp_seconds };
        on_iteration(&stats);
        iterations.push(stats);
        if iteration > 1 && fit_change < options.tol {
            converged = true;
            break;
        }
    }
    let (weights, factors) = arrange(weights, factors, r);
    Ok(CpResult { weights, factors, iterations, converged })
}

/// The initial factors.
fn initial<T: Scalar>(extents: &[usize], options: &CpOptions<T>) -> Result<Vec<Matrix<T>>, KernelError> {
    let r = options.rank;
    match &options.init {
        CpInit::Factors(given) => {
            if given.len() != extents.len() {
                return Err(KernelError::FactorCount { given: given.len(), rank: extents.len() });
            }
            Ok(given.clone())
        }
        CpInit::Random { seed } => {
            let mut rng = SplitMix64::new(*seed);
            extents
                .iter()
                .map(|&rows| {
                    let mut m = Matrix::zeros(rows, r)?;
                    m.as_mut_slice().iter_mut().for_each(|x| *x = T::from_f64(rng.next_f64()));
                    Ok(m)
                })
                .collect()
        }
    }
}

/// `U^T U`, in `f64`: on rayon's pool in blocks of rows when `parallel`
/// and `U` is large, the blocks' sums added in block order (the same bits
/// for a given matrix, whatever the thread count).
fn gram<T: Scalar>(u: &Matrix<T>, parallel: bool) -> DMatrix<f64> {
    let r = u.cols();
    const BLOCK: usize = 4096;
    let rows = u.as_slice();
    let mut g = vec![0.0f64; r * r];
    #[cfg(feature = "parallel")]
    if parallel && u.rows() * r * r >= 1 << 22 {
        use rayon::prelude::*;
        let partial: Vec<Vec<f64>> = rows
            .par_chunks(BLOCK * r.max(1))
            .map(|block| {
                let mut part = vec![0.0f64; r * r];
                gram_upper(block, r, &mut part);
                part
            })
            .collect();
        for part in &partial {
            for (a, b) in g.iter_mut().zip(part) {
                *a += b;
            }
        }
        return symmetric(g, r);
    }
    let _ = parallel;
    for block in rows.chunks(BLOCK * r.max(1)) {
        let mut part = vec![0.0f64; r * r];
        gram_upper(block, r, &mut part);
        for (a, b) in g.iter_mut().zip(&part) {
            *a += b;
        }
    }
    symmetric(g, r)
}

/// The upper triangle of `block^T block` (rows of `r`) into `g`, row-major.
fn gram_upper<T: Scalar>(block: &[T], r: usize, g: &mut [f64]) {
    let mut x = vec![0.0f64; r];
    for row in block.chunks_exact(r.max(1)) {
        for (d, &s) in x.iter_mut().zip(row) {
            *d = s.to_f64();
        }
        for (i, out) in g.chunks_exact_mut(r.max(1)).enumerate() {
            let a = x.get(i).copied().unwrap_or(0.0);
            for (o, &b) in out.iter_mut().skip(i).zip(x.iter().skip(i)) {
                *o += a * b;
            }
        }
    }
}

/// The upper triangle mirrored below, as a matrix.
fn symmetric(mut g: Vec<f64>, r: usize) -> DMatrix<f64> {
    let upper = g.clone();
    for (i, out) in g.chunks_exact_mut(r.max(1)).enumerate() {
        for (j, o) in out.iter_mut().enumerate().take(i) {
            *o = upper.get(j * r + i).copied().unwrap_or(0.0);
        }
    }
    DMatrix::from_row_slice(r, r, &g)
}

/// `V^-1` for a symmetric positive semi-definite `V`: Cholesky, else LU,
/// else the pseudo-inverse.
fn inverse(v: DMatrix<f64>) -> DMatrix<f64> {
    if let Some(chol) = v.clone().cholesky() {
        return chol.inverse();
    }
    if let Some(inv) = v.clone().lu().try_inverse() {
        if inv.iter().all(|x| x.is_finite()) {
            return inv;
        }
    }
    let n = v.nrows();
    v.pseudo_inverse(f64::EPSILON * n as f64).unwrap_or_else(|_| DMatrix::zeros(n, n))
}

/// `out = M * V` for `M` of `I x R` (row-major) and `V` of `R x R`.
fn times_into<T: Scalar>(m: &[T], v: &DMatrix<f64>, out: &mut [T], r: usize, parallel: bool) {
    // `V` row by row (nalgebra stores by column: `V^T`'s storage).
    let v_t: Vec<T> = v.transpose().as_slice().iter().map(|&x| T::from_f64(x)).collect();
    let row = |(dst, src): (&mut [T], &[T])| {
        dst.fill(T::ZERO);
        for (k, &a) in src.iter().enumerate() {
            if let Some(v_row) = v_t.get(k * r..(k + 1) * r) {
                crate::scalar::axpy(dst, a, v_row);
            }
        }
    };
    #[cfg(feature = "parallel")]
    if parallel && m.len() * r >= 1 << 20 {
        use rayon::prelude::*;
        out.par_chunks_exact_mut(r.max(1)).zip(m.par_chunks_exact(r.max(1))).for_each(row);
        return;
    }
    let _ = parallel;
    out.chunks_exact_mut(r.max(1)).zip(m.chunks_exact(r.max(1))).for_each(row);
}

/// Unit 2-norm columns, weights in decreasing order, signs fixed.
fn arrange<T: Scalar>(weights: Vec<f64>, mut factors: Vec<Matrix<T>>, r: usize) -> (Vec<T>, Vec<Matrix<T>>) {
    let mut weights = weights;
    for f in &mut factors {
        let norms: Vec<f64> = (0..r)
            .map(|c| sqrt(f.as_slice().iter().skip(c).step_by(r).map(|x| x.to_f64() * x.to_f64()).sum()))
            .collect();
        for row in f.as_mut_slice().chunks_exact_mut(r) {
            for (x, &n) in row.iter_mut().zip(&norms) {
                if n > 0.0 {
                    *x = T::from_f64(x.to_f64() / n);
                }
            }
        }
        for (w, n) in weights.iter_mut().zip(&norms) {
            *w *= n;
        }
    }
    // Sign fix (the Tensor Toolbox's `fixsigns`): the modes whose column's
    // largest-magnitude entry is negative are flipped, in mode order, an
    // even number of them (an odd one out keeps its sign).
    for c in 0..r {
        let mut signs: Vec<(f64, usize)> = Vec::new();
        for (m, f) in factors.iter().enumerate() {
            let big = f.as_slice().iter().skip(c).step_by(r).map(|x| x.to_f64()).fold(0.0f64, |best, x| {
                if abs(x) > abs(best) {
                    x
                } else {
                    best
                }
            });
            if big < 0.0 {
                signs.push((abs(big), m));
            }
        }
        let flips = signs.len() - signs.len() % 2;
        for &(_, m) in signs.iter().take(flips) {
            if let Some(f) = factors.get_mut(m) {
                for x in f.as_mut_slice().iter_mut().skip(c).step_by(r) {
                    *x = T::ZERO - *x;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..r).collect();
    order.sort_by(|&a, &b| {
        let (wa, wb) = (weights.get(a).copied().unwrap_or(0.0), weights.get(b).copied().unwrap_or(0.0));
        wb.partial_cmp(&wa).unwrap_or(core::cmp::Ordering::Equal)
    });
    let sorted: Vec<T> = order.iter().map(|&c| T::from_f64(weights.get(c).copied().unwrap_or(0.0))).collect();
    for f in &mut factors {
        for row in f.as_mut_slice().chunks_exact_mut(r) {
            let copy: Vec<T> = row.to_vec();
            for (dst, &c) in row.iter_mut().zip(&order) {
                *dst = copy.get(c).copied().unwrap_or(T::ZERO);
            }
        }
    }
    (sorted, factors)
}

/// Wall-clock time where there is a clock (feature `std`).
struct Clock {
    #[cfg(feature = "std")]
    start: std::time::Instant,
}

impl Clock {
    fn start() -> Self {
        Self {
            #[cfg(feature = "std")]
            start: std::time::Instant::now(),
        }
    }

    fn seconds(&self) -> f64 {
        #[cfg(feature = "std")]
        return self.start.elapsed().as_secs_f64();
        #[cfg(not(feature = "std"))]
        0.0
    }
}
