//! `docs/format.md` § 2.1 on the bytes of a buffer of elements: `bool` bytes
//! are 0 or 1, the two high bits of an FP6 byte are zero, and after an odd
//! count of 4-bit elements the unused high nibble is zero. § 5.7.1 packs the
//! quantization-parameter buffers "as § 2.1 prescribes", so the same rules
//! hold for the scales and zero points as for the values.

use hurray_format::{csf, ElementType, Packing, QuantScheme};

use csf_core::{CsfView, Values};

use crate::rule::{Rule, Violation};
use crate::sink::{Sink, Stop};

/// The values buffer, then the scales, then the zero points (buffer order).
pub(crate) fn check_contents<const MAX: usize>(
    view: &CsfView<'_, MAX>,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    check_elements(view.values(), view.nnz(), csf::VALUES_BUFFER, sink)?;
    let Some(q) = view.quantization() else { return Ok(()) };
    // Without a group count (a per-channel axis outside the shape, a block
    // scheme without a block size) the sizes cannot be right, and the
    // quantization rules have said so.
    let Some(groups) = groups(q.scheme, q.axis, q.block_size, view.shape(), view.nnz()) else {
        return Ok(());
    };
    let scales = csf::buffer_count(view.rank());
    check_elements(q.scales, groups, scales, sink)?;
    if let Some(zero_points) = q.zero_points {
        check_elements(zero_points, groups, scales + 1, sink)?;
    }
    Ok(())
}

/// *G*, the number of groups of a quantization scheme (`docs/format.md`
/// § 5.7.1), or `None` when the scheme's fields give none.
pub(crate) fn groups(
    scheme: QuantScheme,
    axis: usize,
    block_size: u64,
    shape: &[u64],
    nnz: u64,
) -> Option<u64> {
    match scheme {
        QuantScheme::PerTensor => Some(1),
        QuantScheme::PerChannel => shape.get(axis).copied(),
        QuantScheme::PerBlock | QuantScheme::Nf4 | QuantScheme::Mxfp => {
            (block_size > 0).then(|| nnz.div_ceil(block_size))
        }
    }
}

/// The § 2.1 rules on `elements`, a buffer meant to hold `count` elements,
/// at index `buffer` of the table. Skipped when the buffer is not exactly
/// `count` elements long: a size rule has reported that, and the contents
/// of a mis-sized buffer have no defined unused bits.
fn check_elements(elements: Values<'_>, count: u64, buffer: usize, sink: &mut dyn Sink) -> Result<(), Stop> {
    let bytes = elements.as_bytes();
    let ty = elements.element_type();
    if ty.values_len(count) != Some(bytes.len() as u64) {
        return Ok(());
    }
    let at = |rule, found: u8, expected, index: usize| {
        Violation::new(rule, u64::from(found), expected).in_buffer(buffer).at_index(index as u64)
    };
    match ty.packing() {
        // Element i sits in byte i / per_byte, low bits first; after an
        // incomplete last byte the bits above the last element are unused.
        Packing::SubByte { bits, per_byte } => {
            let used = (count % u64::from(per_byte)) as u32 * u32::from(bits);
            let last = bytes.len().checked_sub(1).and_then(|i| Some((i, *bytes.get(i)?)));
            if let (Some((index, byte)), true) = (last, used > 0) {
                let spare = (u32::from(byte) >> used) as u8;
                if spare != 0 {
                    sink.violation(at(Rule::ValuesPadding, spare, 0, index))?;
                }
            }
        }
        Packing::Bytes(_) if ty == ElementType::Bool => {
            for (i, &b) in bytes.iter().enumerate() {
                if b > 1 {
                    sink.violation(at(Rule::BoolValue, b, 1, i))?;
                }
            }
        }
        // FP6 sits in the low six bits of its byte; the top two are padding.
        Packing::Bytes(_) if matches!(ty, ElementType::F6E2M3 | ElementType::F6E3M2) => {
            for (i, &b) in bytes.iter().enumerate() {
                if b & 0xc0 != 0 {
                    sink.violation(at(Rule::ValuesPadding, b >> 6, 0, i))?;
                }
            }
        }
        Packing::Bytes(_) => {}
    }
    Ok(())
}
