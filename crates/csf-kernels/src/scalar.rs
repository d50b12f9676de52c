//! The factor element types (`f32`, `f64`) and the length-`R` row
//! operations every kernel is made of.
//!
//! The rows are slices of equal length (the rank `R` of the factors); each
//! operation is a plain loop over zipped slices, which the compiler
//! vectorises without a bounds check per element.

use core::fmt::Debug;
use core::ops::{Add, AddAssign, Mul, Sub};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element type of factor matrices and kernel results: `f32` or `f64`.
///
/// Leaves of any element type are read as this type (integers converted,
/// quantized codes dequantized) once, when a [`Tensor`](crate::Tensor) is
/// made.
pub trait Scalar:
    sealed::Sealed
    + csf_core::Element
    + Copy
    + Default
    + Debug
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + AddAssign
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
    /// The value as an `f64` (exact).
    fn to_f64(self) -> f64;
    /// A leaf value of a CSF tensor as this type (`None`: no such value).
    fn from_value(v: csf_core::Value) -> Self;
    /// The leaf values as a slice of this type, when the buffer holds
    /// exactly this type, natively.
    fn native<'a>(values: &csf_core::Values<'a>) -> Option<&'a [Self]>;
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn from_value(v: csf_core::Value) -> Self {
        v.to_f32()
    }
    fn native<'a>(values: &csf_core::Values<'a>) -> Option<&'a [Self]> {
        values.typed::<f32>()?.as_native()
    }
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_value(v: csf_core::Value) -> Self {
        v.to_f64()
    }
    fn native<'a>(values: &csf_core::Values<'a>) -> Option<&'a [Self]> {
        values.typed::<f64>()?.as_native()
    }
}

/// `acc += v * row`.
#[inline(always)]
pub(crate) fn axpy<T: Scalar>(acc: &mut [T], v: T, row: &[T]) {
    for (a, &x) in acc.iter_mut().zip(row) {
        *a += v * x;
    }
}

/// `acc += x .* y`.
#[inline(always)]
pub(crate) fn hadamard_add<T: Scalar>(acc: &mut [T], x: &[T], y: &[T]) {
    for ((a, &p), &q) in acc.iter_mut().zip(x).zip(y) {
        *a += p * q;
    }
}

/// `dst = x .* y`.
#[inline(always)]
pub(crate) fn hadamard<T: Scalar>(dst: &mut [T], x: &[T], y: &[T]) {
    for ((d, &p), &q) in dst.iter_mut().zip(x).zip(y) {
        *d = p * q;
    }
}

/// `acc += x`.
#[inline(always)]
pub(crate) fn add<T: Scalar>(acc: &mut [T], x: &[T]) {
    for (a, &p) in acc.iter_mut().zip(x) {
        *a += p;
    }
}

/// Row `row` of a row-major matrix of `cols` columns, or `None` past its
/// end. The one place a coordinate becomes a factor row: a coordinate of
/// unvalidated data that is out of range reads nothing.
#[inline(always)]
pub(crate) fn row_of<T>(matrix: &[T], row: u64, cols: usize) -> Option<&[T]> {
    let start = usize::try_from(row).ok()?.checked_mul(cols)?;
    matrix.get(start..start.checked_add(cols)?)
}

/// [`row_of`], mutable.
#[inline(always)]
pub(crate) fn row_of_mut<T>(matrix: &mut [T], row: u64, cols: usize) -> Option<&mut [T]> {
    let start = usize::try_from(row).ok()?.checked_mul(cols)?;
    matrix.get_mut(start..start.checked_add(cols)?)
}
