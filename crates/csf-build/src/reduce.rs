//! Sums over dimensions (`sum_axes`).
//!
//! One walk of the tensor in leaf order reads each entry's logical index and
//! value. What it does with them depends on the rank of the result:
//!
//! - rank 0 to 2: each value is added into a dense row-major accumulator of
//!   the kept shape, at the offset of its kept coordinates. `O(nnz)` time
//!   plus the accumulator's `O(elements)`, which the caller caps.
//! - rank 3 or more: each entry's coordinates are projected onto the kept
//!   dimensions and the result is built with [`Duplicates::Sum`] in the
//!   input's mode order restricted to the kept dimensions. When the summed
//!   dimensions are the deepest levels of the tree, the projected entries
//!   come in that order already, those that meet one index in one run: the
//!   walk adds each run up itself and hands [`build_owned`] input in strict
//!   storage order, which it adopts and builds in one pass (`O(nnz)`).
//!   Otherwise the builder sorts the projected entries (`O(nnz)` radix
//!   passes) and sums those that meet.
//!
//! Values are added in leaf order either way (the builder's sort is stable),
//! so a float result is deterministic; integers wrap, as numpy's do.
//! Explicit zeros sum to zeros and stay stored. Unvalidated (permissively
//! read) tensors give a result or an error, never a panic: a mode order that
//! is not a permutation, a coordinate outside the shape and a leaf without a
//! value are errors.

use csf_core::{CsfView, Element, Value};
use hurray_format::ElementType;

use crate::build::check_permutation;
use crate::{build_owned, BuildError, Built, Duplicates, ModeOrderPolicy, Options, OwnedCoo};

/// What [`sum_axes`] gives.
#[derive(Clone, Debug)]
pub enum Reduced {
    /// A result of rank 3 or more, as a CSF tensor.
    Tensor(Built),
    /// A result of rank 0 to 2 (which CSF does not hold), as a dense array.
    Dense {
        /// The kept dimensions' extents, in logical order (empty for a scalar).
        shape: Vec<u64>,
        /// The sums in row-major order (one element for rank 0),
        /// little-endian, of the sum's element type: the input's, or `f32`
        /// for a quantized input.
        values: Vec<u8>,
    },
}

/// Sums the values of `view` over the logical dimensions `axes`.
///
/// The element type must be `i64`, `u64`, `f32` or `f64` (the accumulator
/// types: a caller summing narrower values casts them first, as numpy
/// does); a quantized tensor sums its dequantized values as `f32`. The
/// result keeps the other dimensions in their logical order. A result of
/// rank 3 or more is a tensor stored in the input's mode order restricted to
/// the kept dimensions (renumbered: `[2, 0, 3, 1]` keeping `{0, 2, 3}` is
/// `[1, 0, 2]`), built on rayon's pool when `parallel`; a smaller one is a
/// dense array, refused when it would hold more than `max_elements`.
/// [`Built::removed`] counts the entries merged into others.
///
/// # Example
/// ```
/// use csf_build::{build, sum_axes, Coo, Indices, Options, Reduced};
///
/// let coo = Coo::new(&[2, 3, 4], Indices::RowMajor(&[0, 0, 1, 0, 2, 1, 1, 1, 3]), &[1.0f64, 2.0, 4.0]);
/// let view = build(&coo, &Options::default())?.tensor;
/// // Over dimensions 1 and 2: one sum per index of dimension 0.
/// let Reduced::Dense { shape, values } = sum_axes(&view.view(), &[1, 2], 1 << 20, false)? else { unreachable!() };
/// let sums: Vec<f64> = values.chunks(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
/// assert_eq!((shape, sums), (vec![2], vec![3.0, 4.0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`BuildError::BadAxes`] when `axes` are not distinct dimensions in
/// increasing order; [`BuildError::UnsupportedType`] for another element
/// type; [`BuildError::TooManyElements`] for a dense result above
/// `max_elements`; and on unvalidated input [`BuildError::BadModeOrder`],
/// [`BuildError::OutOfBounds`] (`entry` counts entries in leaf order) and
/// [`BuildError::MissingValue`].
pub fn sum_axes(
    view: &CsfView<'_>,
    axes: &[usize],
    max_elements: u64,
    parallel: bool,
) -> Result<Reduced, BuildError> {
    let rank = view.rank();
    let increasing = axes.windows(2).all(|w| w.first() < w.get(1));
    if !increasing || axes.last().is_some_and(|&a| a >= rank) {
        return Err(BuildError::BadAxes { axes: axes.to_vec(), rank });
    }
    check_permutation(view.mode_order(), rank)?;
    let job = Job { view, axes, max_elements, parallel };
    let element_type = if view.quantization().is_some() { ElementType::F32 } else { view.element_type() };
    match element_type {
        ElementType::I64 => job.run::<i64>(),
        ElementType::U64 => job.run::<u64>(),
        ElementType::F32 => job.run::<f32>(),
        ElementType::F64 => job.run::<f64>(),
        other => Err(BuildError::UnsupportedType { operation: "sum", element_type: other }),
    }
}

/// An accumulator type.
trait Addend: Element + Default {
    /// `self + other`, wrapping for integers.
    fn plus(self, other: Self) -> Self;
    /// The value of a leaf, when it is of this type.
    fn of(value: Value) -> Option<Self>;
    /// Appends the little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! addend {
    ($t:ty, $variant:ident, $add:ident) => {
        impl Addend for $t {
            #[inline(always)]
            fn plus(self, other: Self) -> Self {
                self.$add(other)
            }
            #[inline]
            fn of(value: Value) -> Option<Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
            #[inline]
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
use core::ops::Add;
addend!(i64, I64, wrapping_add);
addend!(u64, U64, wrapping_add);
addend!(f32, F32, add);
addend!(f64, F64, add);

/// A sum's input and settings.
struct Job<'j, 'a> {
    view: &'j CsfView<'a>,
    axes: &'j [usize],
    max_elements: u64,
    parallel: bool,
}

/// The first error a walk met (a walk cannot stop early).
type Fault = Option<BuildError>;

impl Job<'_, '_> {
    fn run<T: Addend>(&self) -> Result<Reduced, BuildError> {
        let view = self.view;
        let kept: Vec<usize> = (0..view.rank()).filter(|d| !self.axes.contains(d)).collect();
        let shape: Vec<u64> = kept.iter().map(|&d| view.shape().get(d).copied().unwrap_or(0)).collect();
        // The values as a slice when they are native and unquantized (the
        // common case, and one load per entry); through `CsfView::value`
        // otherwise. Either way only leaves below `nnz` have values.
        let nnz = usize::try_from(view.nnz()).unwrap_or(usize::MAX);
        let native = match view.quantization() {
            None => view.values().typed::<T>().and_then(|t| t.as_native()).map(|s| s.get(..nnz).unwrap_or(s)),
            Some(_) => None,
        };
        let read = |leaf: usize, index: &[u64]| match native {
            Some(values) => values.get(leaf).copied(),
            None => view.value(leaf, index).and_then(T::of),
        };
        let mut entry = 0usize;
        // Every coordinate inside the shape, and a value: the entry's value.
        let mut checked = |index: &[u64], leaf: usize, fault: &mut Fault| {
            let at = entry;
            entry += 1;
            if fault.is_some() {
                return None;
            }
            for (dim, (&coord, &extent)) in index.iter().zip(view.shape()).enumerate() {
                if coord >= extent {
                    *fault = Some(BuildError::OutOfBounds { entry: at, dim, coord, extent });
                    return None;
                }
            }
            let value = read(leaf, index);
            if value.is_none() {
                *fault = Some(BuildError::MissingValue { leaf: leaf as u64 });
            }
            value
        };
        if kept.len() < 3 {
            return self.dense::<T>(&kept, shape, &mut checked);
        }
        self.tensor::<T>(&kept, shape, &mut checked)
    }

    /// The sums as a dense array of the kept shape.
    fn dense<T: Addend>(
        &self,
        kept: &[usize],
        shape: Vec<u64>,
        checked: &mut impl FnMut(&[u64], usize, &mut Fault) -> Option<T>,
    ) -> Result<Reduced, BuildError> {
        let too_many =
            || BuildError::TooManyElements { shape: shape.clone(), max_elements: self.max_elements };
        let count = shape
            .iter()
            .try_fold(1u64, |n, &e| n.checked_mul(e))
            .filter(|&n| n <= self.max_elements)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(too_many)?;
        let mut sums = vec![T::default(); count];
        let mut fault = None;
        self.view.for_each(|index, leaf| {
            let Some(value) = checked(index, leaf, &mut fault) else { return };
            // Row-major offset of the kept coordinates, each inside its extent.
            let offset = kept
                .iter()
                .zip(&shape)
                .fold(0u64, |o, (&d, &e)| o.wrapping_mul(e).wrapping_add(index.get(d).copied().unwrap_or(0)));
            if let Some(sum) = usize::try_from(offset).ok().and_then(|o| sums.get_mut(o)) {
                *sum = sum.plus(value);
            }
        });
        if let Some(fault) = fault {
            return Err(fault);
        }
        let mut values = Vec::with_capacity(count.saturating_mul(core::mem::size_of::<T>()));
        sums.into_iter().for_each(|s| s.put(&mut values));
        Ok(Reduced::Dense { shape, values })
    }

    /// The sums as a CSF tensor of the kept shape.
    fn tensor<T: Addend>(
        &self,
        kept: &[usize],
        shape: Vec<u64>,
        checked: &mut impl FnMut(&[u64], usize, &mut Fault) -> Option<T>,
    ) -> Result<Reduced, BuildError> {
        let view = self.view;
        let rank = view.rank();
        // The stored order restricted to the kept dimensions, renumbered.
        let order: Vec<u32> = view
            .mode_order()
            .iter()
            .filter_map(|&d| kept.iter().position(|&k| k == d as usize))
            .map(|new| new as u32)
            .collect();
        // The summed dimensions are the deepest levels: entries that meet
        // one index are consecutive in leaf order.
        let runs = view.mode_order().iter().take(kept.len()).all(|&d| kept.contains(&(d as usize)));
        // Capacities from the leaves stored (bytes present), never from `nnz`.
        let leaves = view.node_count(rank.saturating_sub(1));
        let mut columns: Vec<Vec<u64>> = kept.iter().map(|_| Vec::with_capacity(leaves)).collect();
        let mut sums: Vec<T> = Vec::with_capacity(leaves);
        let mut walked = 0u64;
        let mut fault = None;
        view.for_each(|index, leaf| {
            walked += 1;
            let Some(value) = checked(index, leaf, &mut fault) else { return };
            let same =
                runs && !sums.is_empty() && kept.iter().zip(&columns).all(|(&d, c)| c.last() == index.get(d));
            match sums.last_mut() {
                Some(sum) if same => *sum = sum.plus(value),
                _ => {
                    for (&d, column) in kept.iter().zip(&mut columns) {
                        column.push(index.get(d).copied().unwrap_or(0));
                    }
                    sums.push(value);
                }
            }
        });
        if let Some(fault) = fault {
            return Err(fault);
        }
        let mut values = Vec::with_capacity(sums.len().saturating_mul(core::mem::size_of::<T>()));
        sums.into_iter().for_each(|s| s.put(&mut values));
        let coo = OwnedCoo { shape, columns, element_type: T::TYPE, values };
        let options = Options {
            mode_order: ModeOrderPolicy::Explicit(order),
            duplicates: Duplicates::Sum,
            drop_zeros: false,
            parallel: self.parallel,
            quantize: None,
        };
        let built = build_owned(coo, &options)?;
        let removed = walked.saturating_sub(built.tensor.view().nnz());
        Ok(Reduced::Tensor(Built { removed, ..built }))
    }
}
