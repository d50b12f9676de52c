//! Comparing two tensors entry by entry (`equal`).
//!
//! Two tensors are the same when their shapes are equal and their dense
//! arrays of values are: an explicitly stored zero equals an absent entry,
//! NaN equals NaN at the same index (pandas' `equals`), `+0.0` equals
//! `-0.0`, and values are compared by the number they mean (`CsfView::value`:
//! dequantized for a quantized tensor), not by their bits or type.
//!
//! Algorithm: when both store the same mode order, their leaf-order walks
//! are two streams sorted by the storage-order coordinate tuple; a merge of
//! the two, skipping zeros, compares them in `O(nnz_a + nnz_b)` steps, with
//! two cursors and no allocation. When the orders differ, one tensor (the
//! smaller, unless it is block-quantized: see [`sorted`]) is first rebuilt
//! in the other's order with [`reorder`], a sort of its `nnz` entries:
//! `O(nnz log nnz)` time and a copy of that tensor in memory.
//!
//! Unvalidated (permissively read) tensors get an answer or an error, never
//! a wrong answer: the merge checks as it walks that each stream is strictly
//! increasing, that every coordinate is inside the shape and that every leaf
//! has a value, and walks both streams to their ends even once a difference
//! is found (a later entry out of order would make the difference moot).
//! Streams out of order are sorted by a rebuild in the same order (which
//! refuses an index stored twice) and merged again.

use core::cmp::Ordering;

use csf_core::{CsfView, Cursor, Value};
use hurray_format::QuantScheme;

use crate::build::check_permutation;
use crate::{build, reorder, BuildError, Built, Coo, Indices, ModeOrderPolicy, Options, ReorderOptions};

/// Whether `a` and `b` are the same tensor: equal shapes, and equal dense
/// arrays of values (see the module docs for what counts as equal; the
/// element types are not compared, the caller checks them).
///
/// # Example
/// ```
/// use csf_build::{build, equal, Coo, Indices, ModeOrderPolicy, Options};
///
/// let shape = [2, 3, 4];
/// let a = build(&Coo::new(&shape, Indices::RowMajor(&[0, 0, 1, 1, 2, 3]), &[1.5f64, -0.0]), &Options::default())?;
/// // The same non-zero, stored k first, without the explicit zero.
/// let order = Options { mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 1]), ..Options::default() };
/// let b = build(&Coo::new(&shape, Indices::RowMajor(&[0, 0, 1]), &[1.5f64]), &order)?;
/// assert!(equal(&a.tensor.view(), &b.tensor.view())?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// Only on unvalidated input: [`BuildError::BadModeOrder`] when a mode order
/// is not a permutation, [`BuildError::OutOfBounds`] for a coordinate
/// outside the shape (`entry` counts the stream's entries in leaf order),
/// [`BuildError::MissingValue`] for a leaf without a value,
/// [`BuildError::Duplicate`] for an index stored twice; and as [`reorder`]
/// when the mode orders differ.
pub fn equal(a: &CsfView<'_>, b: &CsfView<'_>) -> Result<bool, BuildError> {
    if a.shape() != b.shape() {
        return Ok(false);
    }
    check_permutation(a.mode_order(), a.rank())?;
    check_permutation(b.mode_order(), b.rank())?;
    if a.mode_order() == b.mode_order() {
        return equal_in_order(a, b);
    }
    // Rebuild one in the other's order; the smaller costs less, but a
    // block-quantized one is better kept (see `sorted`).
    let keep_a = match (block_quantized(a), block_quantized(b)) {
        (true, false) => true,
        (false, true) => false,
        _ => a.nnz() >= b.nnz(),
    };
    let (kept, moved) = if keep_a { (a, b) } else { (b, a) };
    let moved = sorted(moved, kept.mode_order())?;
    equal_in_order(kept, &moved.tensor.view())
}

/// [`equal`] of two tensors of one shape and one mode order.
fn equal_in_order(a: &CsfView<'_>, b: &CsfView<'_>) -> Result<bool, BuildError> {
    if let Some(verdict) = merge(a, b)? {
        return Ok(verdict);
    }
    // A stream out of order (unvalidated input): sort both and merge again.
    let order = a.mode_order();
    let (a, b) = (sorted(a, order)?, sorted(b, order)?);
    let verdict = merge(&a.tensor.view(), &b.tensor.view())?;
    // Built tensors keep every storage invariant: their walks are in order.
    debug_assert!(verdict.is_some(), "a built tensor's leaf order is its storage order");
    Ok(verdict.unwrap_or(false))
}

/// Whether the tensor is quantized by a scheme whose groups are runs of
/// leaves: [`reorder`] re-quantizes those, which changes their values.
fn block_quantized(view: &CsfView<'_>) -> bool {
    view.quantization()
        .is_some_and(|q| matches!(q.scheme, QuantScheme::PerBlock | QuantScheme::Nf4 | QuantScheme::Mxfp))
}

/// The tensor rebuilt in `order` with the same values: by [`reorder`], or
/// for a block-quantized tensor (which `reorder` re-quantizes, moving each
/// value by up to its rounding error) as its dequantized `f32`s, unquantized.
fn sorted(view: &CsfView<'_>, order: &[u32]) -> Result<Built, BuildError> {
    let mode_order = ModeOrderPolicy::Explicit(order.to_vec());
    if !block_quantized(view) {
        return reorder(view, &ReorderOptions { mode_order, parallel: true });
    }
    let mut indices = Vec::with_capacity(view.node_count(view.rank().saturating_sub(1)) * view.rank());
    let mut values = Vec::with_capacity(view.node_count(view.rank().saturating_sub(1)));
    let mut missing = None;
    view.for_each(|index, leaf| match view.value_f32(leaf, index) {
        Some(v) => {
            indices.extend_from_slice(index);
            values.push(v);
        }
        None => {
            missing.get_or_insert(leaf as u64);
        }
    });
    if let Some(leaf) = missing {
        return Err(BuildError::MissingValue { leaf });
    }
    build(
        &Coo::new(view.shape(), Indices::RowMajor(&indices), &values),
        &Options { mode_order, ..Options::default() },
    )
}

/// Merges the leaf-order streams of `a` and `b` (one shape, one mode
/// order): `Some(equal)`, or `None` when a stream is not strictly
/// increasing. Both streams are walked to their ends whatever they hold.
fn merge(a: &CsfView<'_>, b: &CsfView<'_>) -> Result<Option<bool>, BuildError> {
    let (mut a, mut b) = (Stream::new(a), Stream::new(b));
    let mut same = true;
    let (mut at_a, mut at_b) = (a.next()?, b.next()?);
    loop {
        let order = match (at_a, at_b) {
            (Step::Disordered, _) | (_, Step::Disordered) => return Ok(None),
            (Step::End, Step::End) => return Ok(Some(same)),
            (Step::Entry, Step::End) => Ordering::Less,
            (Step::End, Step::Entry) => Ordering::Greater,
            (Step::Entry, Step::Entry) => a.cursor.coords().cmp(b.cursor.coords()),
        };
        // A non-zero on one side only, or two different values.
        same &= order == Ordering::Equal && a.value.same(b.value);
        if order != Ordering::Greater {
            at_a = a.next()?;
        }
        if order != Ordering::Less {
            at_b = b.next()?;
        }
    }
}

/// Where a stream stands after [`Stream::next`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// At a non-zero.
    Entry,
    /// Past the last entry.
    End,
    /// At an entry whose coordinates do not follow the previous one's.
    Disordered,
}

/// A tensor's non-zeros in leaf order, checked as they are read.
struct Stream<'v, 'a> {
    cursor: Cursor<'v, 'a>,
    view: &'v CsfView<'a>,
    /// The previous entry's storage-order coordinates (none before the first).
    previous: Option<Vec<u64>>,
    /// Entries read so far, zeros included.
    entries: usize,
    /// The current entry's value.
    value: Number,
}

impl<'v, 'a> Stream<'v, 'a> {
    fn new(view: &'v CsfView<'a>) -> Self {
        Stream { cursor: view.cursor(), view, previous: None, entries: 0, value: Number::Int(0) }
    }

    /// Moves to the next non-zero.
    fn next(&mut self) -> Result<Step, BuildError> {
        while self.cursor.advance() {
            let coords = self.cursor.coords();
            match &mut self.previous {
                Some(previous) if coords <= previous.as_slice() => return Ok(Step::Disordered),
                Some(previous) => previous.copy_from_slice(coords),
                None => self.previous = Some(coords.to_vec()),
            }
            let entry = self.entries;
            self.entries += 1;
            for (&dim, &coord) in self.view.mode_order().iter().zip(coords) {
                let extent = self.view.shape().get(dim as usize).copied().unwrap_or(0);
                if coord >= extent {
                    return Err(BuildError::OutOfBounds { entry, dim: dim as usize, coord, extent });
                }
            }
            let leaf = self.cursor.leaf();
            let value = self.cursor.value().ok_or(BuildError::MissingValue { leaf: leaf as u64 })?;
            self.value = Number::of(value);
            if !self.value.is_zero() {
                return Ok(Step::Entry);
            }
        }
        Ok(Step::End)
    }
}

/// A value as the number it means: integers (and `bool`) exactly, floats
/// (every float type decodes exactly to `f64`) as `f64`.
#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn of(value: Value) -> Self {
        match value {
            Value::Bool(v) => Number::Int(i128::from(v)),
            Value::I8(v) | Value::I4(v) => Number::Int(i128::from(v)),
            Value::I16(v) => Number::Int(i128::from(v)),
            Value::I32(v) => Number::Int(i128::from(v)),
            Value::I64(v) => Number::Int(i128::from(v)),
            Value::U8(v) | Value::U4(v) => Number::Int(i128::from(v)),
            Value::U16(v) => Number::Int(i128::from(v)),
            Value::U32(v) => Number::Int(i128::from(v)),
            Value::U64(v) => Number::Int(i128::from(v)),
            other => Number::Float(other.to_f64()),
        }
    }

    fn is_zero(self) -> bool {
        match self {
            Number::Int(v) => v == 0,
            // `-0.0 == 0.0`; NaN is not zero.
            Number::Float(v) => v == 0.0,
        }
    }

    /// Equal numbers, NaN equal to NaN.
    fn same(self, other: Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            (Number::Float(a), Number::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            // Exactly: the float is that integer (`as` saturates, and NaN
            // goes to 0, which the second test then refuses).
            (Number::Int(i), Number::Float(f)) | (Number::Float(f), Number::Int(i)) => {
                f as i128 == i && i as f64 == f
            }
        }
    }
}
