//! Re-ordering an existing tensor: its entries, read in leaf order, rebuilt
//! in another mode order, their values' meaning kept.

use csf_core::{CsfView, OwnedQuantization};
use hurray_format::QuantScheme;

use super::build;
use crate::values::{pack, Slots};
use crate::{BuildError, Built, Coo, Indices, ModeOrderPolicy, Options, Quantize};

/// How [`reorder`] rebuilds a tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReorderOptions {
    /// The mode order to store after re-ordering (the default is the
    /// identity order; [`ModeOrderPolicy::Auto`] picks the smallest).
    pub mode_order: ModeOrderPolicy,
    /// Sort and gather on rayon's thread pool (the default), rather than on
    /// the calling thread alone.
    pub parallel: bool,
}

impl Default for ReorderOptions {
    fn default() -> Self {
        Self { mode_order: ModeOrderPolicy::Identity, parallel: true }
    }
}

/// Re-orders an existing tensor to another mode order, without going through a
/// dense array: its entries are read in leaf order and rebuilt.
///
/// Every value keeps its meaning. A quantized tensor stays quantized with the
/// same scheme:
/// - per-tensor and per-channel: a leaf's group does not depend on the leaf
///   order (it is 0, or a coordinate), so the codes move with their entries
///   and the parameter buffers are carried over unchanged: the values are
///   bit-for-bit the same;
/// - per-block, NF4 and MXFP: a block is a run of consecutive leaves, which
///   a new order regroups, so the tensor is re-quantized from its dequantized
///   values with the same scheme, element type, block size and zero-point
///   choice, as [`quantize`](crate::quantize()) writes it (`f32` scales, or
///   E8M0 for MXFP). Each value then differs from the one before by at most
///   the scheme's rounding error in its new block.
///
/// # Example
/// ```
/// use csf_build::{build, reorder, Coo, Indices, ModeOrderPolicy, Options, ReorderOptions};
///
/// let coo = Coo::new(&[2, 3, 4], Indices::RowMajor(&[1, 1, 2, 0, 0, 1]), &[4.0f32, 1.0]);
/// let built = build(&coo, &Options::default())?;
/// let options = ReorderOptions { mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 1]), ..ReorderOptions::default() };
/// let moved = reorder(&built.tensor.view(), &options)?;
/// let view = moved.tensor.view();
/// assert_eq!(view.mode_order(), [2, 0, 1]);
/// assert_eq!(view.get_f64(&[1, 1, 2])?, 4.0); // the same tensor, stored k first
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`build`] (a duplicate can only come from unvalidated input);
/// [`BuildError::MissingValue`] when a stored leaf has no value (unvalidated
/// input); [`BuildError::Quantize`] when re-quantizing meets a value that is
/// not finite (an MXFP block whose scale is NaN, say).
pub fn reorder(view: &CsfView<'_>, options: &ReorderOptions) -> Result<Built, BuildError> {
    let ReorderOptions { mode_order, parallel } = options.clone();
    let options = Options { mode_order, parallel, ..Options::default() };
    let quantization = view.quantization();
    let scheme = quantization.map(|q| q.scheme);
    if matches!(scheme, Some(QuantScheme::PerBlock | QuantScheme::Nf4 | QuantScheme::Mxfp)) {
        return requantize(view, &options);
    }
    let mut indices = Vec::with_capacity(view.nnz() as usize * view.rank());
    let mut leaves = Vec::with_capacity(view.nnz() as usize);
    view.for_each(|index, leaf| {
        indices.extend_from_slice(index);
        leaves.push(leaf as u64);
    });
    let values = view.values();
    // Only leaves below nnz hold values (the descriptor's nnz is authoritative);
    // a longer leaf level or a short buffer is unvalidated input, refused
    // rather than filled with made-up values.
    let have = values.capacity().min(usize::try_from(view.nnz()).unwrap_or(usize::MAX));
    if let Some(&leaf) = leaves.iter().find(|&&l| l >= have as u64) {
        return Err(BuildError::MissingValue { leaf });
    }
    let slots = Slots::new(values.element_type(), values.as_bytes(), have);
    let coo = Coo {
        shape: view.shape(),
        indices: Indices::RowMajor(&indices),
        element_type: values.element_type(),
        values: pack(slots.element_type, slots.gather(&leaves, parallel)).into(),
    };
    let built = build(&coo, &options)?;
    // Per-tensor and per-channel parameters do not depend on leaf order.
    Ok(match quantization {
        Some(q) => Built { tensor: built.tensor.with_quantization(OwnedQuantization::from_view(q)), ..built },
        None => built,
    })
}

/// [`reorder`] for the block schemes: rebuild the dequantized values in the
/// new order, then quantize them again with the same scheme.
fn requantize(view: &CsfView<'_>, options: &Options) -> Result<Built, BuildError> {
    let Some(q) = view.quantization() else { return Err(BuildError::MissingValue { leaf: 0 }) };
    let spec = match q.scheme {
        QuantScheme::Nf4 => Quantize::Nf4 { block_size: q.block_size },
        QuantScheme::Mxfp => Quantize::Mxfp { dtype: view.element_type() },
        _ => Quantize::PerBlock {
            block_size: q.block_size,
            dtype: view.element_type(),
            zero_point: q.zero_points.is_some(),
        },
    };
    let mut indices = Vec::with_capacity(view.nnz() as usize * view.rank());
    let mut values = Vec::with_capacity(view.nnz() as usize);
    let mut missing = None;
    view.for_each(|index, leaf| {
        match view.value_f32(leaf, index) {
            Some(v) => values.push(v),
            None => {
                missing.get_or_insert(leaf as u64);
            }
        }
        indices.extend_from_slice(index);
    });
    if let Some(leaf) = missing {
        return Err(BuildError::MissingValue { leaf });
    }
    let coo = Coo::new(view.shape(), Indices::RowMajor(&indices), &values);
    build(&coo, &Options { quantize: Some(spec), ..options.clone() })
}
