#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
// `unsafe` lives in one module, `simd` (the choice of vector instructions
// at run time), and nowhere else.
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod cp;
mod matrix;
mod mttkrp;
mod ops;
mod rng;
mod scalar;
mod simd;
mod tensor;
mod ttm;
#[cfg(feature = "build")]
mod ttv;
mod unfold;

pub use cp::{cp_als, cp_als_with, CpInit, CpOptions, CpResult, IterationStats};
pub use matrix::{MatRef, Matrix};
pub use scalar::Scalar;
pub use tensor::Tensor;
pub use ttm::SemiSparse;
#[cfg(feature = "build")]
pub use ttv::Ttv;
pub use unfold::Csr;

use alloc::vec::Vec;

/// Why a kernel could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The tensor's mode order is not a permutation of its dimensions
    /// (possible only on unvalidated data).
    #[error("mode order {order:?} is not a permutation of 0..{rank}")]
    BadModeOrder {
        /// The mode order stored.
        order: Vec<u32>,
        /// The tensor's rank.
        rank: usize,
    },
    /// The mode asked for is not a dimension of the tensor.
    #[error("mode {mode} is not a dimension of a rank-{rank} tensor")]
    BadMode {
        /// The mode asked for.
        mode: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// Not one factor matrix per dimension.
    #[error("{given} factor matrices given for a rank-{rank} tensor")]
    FactorCount {
        /// The number given.
        given: usize,
        /// The tensor's rank, the number expected.
        rank: usize,
    },
    /// A factor matrix whose shape does not fit the tensor.
    #[error("factor matrix {mode} is {rows} x {cols}; {expected_rows} x {expected_cols} expected")]
    FactorShape {
        /// The dimension the matrix is for.
        mode: usize,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The dimension's extent.
        expected_rows: u64,
        /// The columns of the first factor matrix (the decomposition's rank).
        expected_cols: usize,
    },
    /// A matrix's buffer does not hold `rows * cols` elements.
    #[error("a {rows} x {cols} matrix over {len} elements")]
    MatrixLength {
        /// The rows asked for.
        rows: usize,
        /// The columns asked for.
        cols: usize,
        /// The elements given.
        len: usize,
    },
    /// An output buffer of the wrong length.
    #[error("an output buffer of {len} elements; {expected} expected")]
    OutputLength {
        /// Its length.
        len: usize,
        /// The length the result needs.
        expected: usize,
    },
    /// A vector whose length is not the extent of its mode.
    #[error("a vector of {len} elements along mode {mode} of extent {extent}")]
    VectorLength {
        /// Its length.
        len: usize,
        /// The mode.
        mode: usize,
        /// The mode's extent.
        extent: u64,
    },
    /// A dimension too large to index a factor matrix on this machine.
    #[error("dimension {dim}'s extent {extent} does not fit a usize")]
    ExtentTooLarge {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: u64,
    },
    /// A result larger than this machine can address.
    #[error("the {what} would be {rows} x {cols}, more elements than a usize counts")]
    TooLarge {
        /// Which result.
        what: &'static str,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
    },
    /// The allocator refused a result whose size comes from the tensor's
    /// extents (an output of `I_n` rows, say).
    #[error("cannot allocate the {what} ({bytes} bytes)")]
    OutOfMemory {
        /// What was being allocated.
        what: &'static str,
        /// Its size.
        bytes: u64,
    },
    /// A TTM matrix without a column per index of its mode.
    #[error("the TTM matrix is {rows} x {cols}; mode {mode} needs {extent} columns")]
    TtmMatrix {
        /// The matrix's rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The mode.
        mode: usize,
        /// The mode's extent.
        extent: u64,
    },
    /// Kruskal weights that are not one per column of the factors.
    #[error("{len} weights for factors of {rank} columns")]
    WeightsLength {
        /// The weights given.
        len: usize,
        /// The factors' column count.
        rank: usize,
    },
    /// A dense result above the caller's element budget.
    #[error("the dense result has {elements} elements, more than the {budget} allowed")]
    DenseTooLarge {
        /// Its element count (`u64::MAX` when it overflows).
        elements: u64,
        /// The budget.
        budget: usize,
    },
    /// Initial CP factors whose column count is not the decomposition's rank.
    #[error("initial factors of {cols} columns for a rank-{rank} decomposition")]
    InitRank {
        /// Their columns.
        cols: usize,
        /// The rank asked for.
        rank: usize,
    },
    /// The mode-`n` unfolding has more columns than a CSR index holds
    /// (the product of the other extents must stay below 2^63).
    #[error("the mode-{mode} unfolding has more than 2^63 - 1 columns (the product of the other extents)")]
    UnfoldTooWide {
        /// The mode unfolded.
        mode: usize,
    },
    /// A CP decomposition of rank 0.
    #[error("a CP decomposition needs a rank of at least 1")]
    ZeroRank,
    /// CP-ALS produced a non-finite factor (the tensor holds infinities or
    /// NaN, or the normal equations are too ill-conditioned).
    #[error("CP-ALS: factor {mode} became non-finite at iteration {iteration}")]
    NotFinite {
        /// The mode whose update failed.
        mode: usize,
        /// The iteration (from 1).
        iteration: usize,
    },
    /// Building a result tensor (TTV) or a second tree failed.
    #[cfg(feature = "build")]
    #[error(transparent)]
    Build(#[from] csf_build::BuildError),
}
