//! The descriptor-level rules: rank, mode order, buffer table, sizes, byte
//! offset, sharding, quantization devices, statistics.

use hurray_format::limits::MAX_RANK;
use hurray_format::{csf, Container, ElementType, Flags, LayoutTag, QuantScheme, Quantization};

use csf_core::{CsfView, Quantized, Values, ViewError};

use crate::invariants::{check_invariants, check_sizes};
use crate::rule::{Rule, Violation, Warning};
use crate::sink::{Sink, Stop};
use crate::Mode;

/// Checks a container in `mode`. Puts the view in `out` when the structural
/// rules hold (so that a view can exist at all), whatever else was reported.
///
/// The view is handed back through `out`, and read there in place, rather
/// than returned: it is 1.9 KiB on a 32-bit target, and each
/// `Result`/`Option` layer it was moved through on the way to the caller was
/// another copy on the stack (strict validation of the spec's example
/// overflowed a Cortex-M0 with 16 KiB of RAM).
pub(crate) fn check_container<'a>(
    container: &Container<'a>,
    mode: Mode,
    sink: &mut dyn Sink,
    out: &mut Option<CsfView<'a>>,
) -> Result<(), Stop> {
    let view = out.insert(CsfView::empty());
    match view.read_container(container) {
        Ok(()) => check_rules(container, view, mode, Warnings::Report, sink),
        Err(e) => {
            *out = None;
            sink.violation(structural(e))
        }
    }
}

/// Every rule of `mode` beyond the view's own structural checks, on the
/// view of `container`'s buffers. The shape and the mode order are the
/// view's copies of the descriptor's (the container reads its lists from
/// the input on demand).
pub(crate) fn check_rules<const MAX: usize>(
    container: &Container<'_>,
    view: &CsfView<'_, MAX>,
    mode: Mode,
    warnings: Warnings,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    if mode == Mode::Strict {
        check_mode_order(view.mode_order(), sink)?;
    }
    check_descriptor(container, view, warnings, sink)?;
    check_sizes(view, sink)?;
    if mode == Mode::Strict {
        check_invariants(view, sink)?;
    }
    Ok(())
}

/// Whether the sink is sent the warnings that are costly to work out (the
/// statistics `sparsity_ratio`, in binary64): not for a fail-fast
/// validation, which drops them. Passed as a constant, so that a program
/// that only validates fail-fast links no software `f64` arithmetic on a
/// microcontroller (on a Cortex-M4F that is about 2.5 KiB of flash, which the
/// compiler only removed on its own while it saw through the `dyn Sink`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Warnings {
    /// Work them out and send them.
    Report,
    /// The sink drops them: do not work them out.
    Drop,
}

/// The structural rule a [`ViewError`] breaks: each error its own rule, so
/// that the violation names what `csf-core` found and nothing else.
pub(crate) fn structural(e: ViewError) -> Violation {
    match e {
        ViewError::NotCsf(layout) => {
            Violation::new(Rule::LayoutNotCsf, u64::from(layout.0), u64::from(LayoutTag::CSF.0))
        }
        ViewError::RankTooSmall { rank } => Violation::new(Rule::RankBelow3, rank as u64, 3),
        ViewError::RankTooLarge { rank, .. } if rank > MAX_RANK => {
            Violation::new(Rule::RankAbove64, rank as u64, MAX_RANK as u64)
        }
        // A rank the format allows, above the capacity the caller chose for
        // its view (`validate_capped`): no rule of the format is broken, the
        // view cannot hold the tensor.
        ViewError::RankTooLarge { rank, capacity } => {
            Violation::new(Rule::ViewRefused, rank as u64, capacity as u64)
        }
        ViewError::ModeOrderLength { len, rank } => {
            Violation::new(Rule::ModeOrderLength, len as u64, rank as u64)
        }
        ViewError::MissingBuffer { count, needed, .. } => {
            Violation::new(Rule::MissingBuffer, count as u64, needed as u64)
        }
        ViewError::NotU64Array { index, len } => {
            let level = index.saturating_sub(1) / 2;
            Violation::new(Rule::BufferNotU64, len as u64, 8).in_buffer(index).at_level(level)
        }
        // `ViewError` may grow (it is `#[non_exhaustive]`): a check this
        // crate has no rule for yet is reported as what it is, a refused
        // view, rather than as the closest rule it knows.
        _ => Violation::new(Rule::ViewRefused, 0, 0),
    }
}

/// § Mode Ordering: `mode_order` is a permutation of `0..rank`. Each entry
/// out of range or seen before is one violation, at its position.
pub(crate) fn check_mode_order(mode_order: &[u32], sink: &mut dyn Sink) -> Result<(), Stop> {
    let rank = mode_order.len();
    for i in hurray_format::limits::permutation_faults(mode_order) {
        let dim = mode_order.get(i).copied().unwrap_or_default();
        let v = Violation::new(Rule::ModeOrderNotPermutation, u64::from(dim), rank as u64);
        sink.violation(v.at_index(i as u64))?;
    }
    Ok(())
}

/// What `docs/format.md` § 5.7 constrains of a quantized tensor, taken from a
/// descriptor and its buffer table or from a view with its parameters.
pub(crate) struct QuantFields<'s> {
    values_type: ElementType,
    shape: &'s [u64],
    nnz: u64,
    scheme: QuantScheme,
    axis: u64,
    block_size: u64,
    scale_type: ElementType,
    zero_point_type: Option<ElementType>,
    /// The parameter buffers' lengths in bytes (scales, zero points), when present.
    lengths: [Option<u64>; 2],
}

impl<'s> QuantFields<'s> {
    fn from_container<const MAX: usize>(
        c: &Container<'_>,
        view: &'s CsfView<'_, MAX>,
        q: &Quantization,
    ) -> Self {
        let mut params = c.buffer_entries().skip(csf::buffer_count(c.rank())).map(|e| e.length);
        Self {
            values_type: c.element_type(),
            shape: view.shape(),
            nnz: c.nnz(),
            scheme: q.scheme,
            axis: u64::from(q.axis),
            block_size: q.block_size,
            scale_type: q.scale_type,
            zero_point_type: q.zero_point_type,
            lengths: [params.next(), params.next()],
        }
    }

    /// A view built from parts carries no descriptor: its quantization is
    /// what [`CsfView::with_quantization`] attached.
    pub(crate) fn from_view<const MAX: usize>(view: &'s CsfView<'_, MAX>, q: &Quantized<'_>) -> Self {
        let length = |v: Values<'_>| v.as_bytes().len() as u64;
        Self {
            values_type: view.element_type(),
            shape: view.shape(),
            nnz: view.nnz(),
            scheme: q.scheme,
            axis: q.axis as u64,
            block_size: q.block_size,
            scale_type: q.scales.element_type(),
            zero_point_type: q.zero_points.map(|z| z.element_type()),
            lengths: [Some(length(q.scales)), q.zero_points.map(length)],
        }
    }
}

/// `docs/format.md` § 5.7.1 and § 5.7.2: the scheme's types, axis, block size
/// and parameter-buffer sizes. In the violations, `expected` of
/// [`Rule::QuantizationTypes`] is the scheme's code.
pub(crate) fn check_quantization(q: &QuantFields<'_>, sink: &mut dyn Sink) -> Result<(), Stop> {
    use ElementType as T;
    let scheme = q.scheme as u64;
    let values = q.values_type;
    let integer = |t: T| matches!(t, T::I4 | T::U4 | T::I8 | T::U8 | T::I16 | T::U16 | T::I32 | T::U32);
    let float_scale = |t: T| matches!(t, T::F32 | T::F16 | T::BF16);
    let (values_ok, scale_ok, zero_ok) = match q.scheme {
        QuantScheme::PerTensor | QuantScheme::PerChannel | QuantScheme::PerBlock => (
            integer(values) || matches!(values, T::F8E4M3 | T::F8E5M2),
            float_scale(q.scale_type),
            q.zero_point_type.map_or(true, |z| integer(values) && z == values),
        ),
        QuantScheme::Nf4 => (values == T::NF4, float_scale(q.scale_type), q.zero_point_type.is_none()),
        QuantScheme::Mxfp => (
            matches!(values, T::F8E4M3 | T::F8E5M2 | T::F6E2M3 | T::F6E3M2 | T::F4E2M1),
            q.scale_type == T::E8M0,
            q.zero_point_type.is_none(),
        ),
    };
    let rank = q.shape.len();
    let first = csf::buffer_count(rank);
    let types = [
        (values_ok, values, csf::VALUES_BUFFER),
        (scale_ok, q.scale_type, first),
        (zero_ok, q.zero_point_type.unwrap_or(q.scale_type), first + 1),
    ];
    for (ok, ty, buffer) in types {
        if !ok {
            sink.violation(
                Violation::new(Rule::QuantizationTypes, u64::from(ty.code()), scheme).in_buffer(buffer),
            )?;
        }
    }
    // Axis: only per-channel has one, and it names a logical dimension.
    let axis_limit = if q.scheme == QuantScheme::PerChannel { rank as u64 } else { 1 };
    if q.axis >= axis_limit {
        sink.violation(Violation::new(Rule::QuantizationAxis, q.axis, axis_limit))?;
    }
    let block_wanted = match q.scheme {
        QuantScheme::PerTensor | QuantScheme::PerChannel => Some(0),
        QuantScheme::Mxfp => Some(32),
        QuantScheme::PerBlock | QuantScheme::Nf4 => None, // any non-zero size
    };
    let block_ok = block_wanted.map_or(q.block_size > 0, |b| q.block_size == b);
    if !block_ok {
        sink.violation(Violation::new(Rule::QuantizationBlockSize, q.block_size, block_wanted.unwrap_or(1)))?;
    }
    // Sizes: one element per group.
    let axis = usize::try_from(q.axis).unwrap_or(usize::MAX);
    let groups = crate::contents::groups(q.scheme, axis, q.block_size, q.shape, q.nnz);
    let params = [(q.scale_type, first), (q.zero_point_type.unwrap_or(q.scale_type), first + 1)];
    let present = 1 + usize::from(q.zero_point_type.is_some());
    for ((ty, buffer), length) in params.into_iter().zip(q.lengths).take(present) {
        let (Some(groups), Some(length)) = (groups, length) else { continue };
        let want = ty.values_len(groups).unwrap_or(u64::MAX);
        if length != want {
            sink.violation(Violation::new(Rule::QuantizationSize, length, want).in_buffer(buffer))?;
        }
    }
    Ok(())
}

/// Rules on descriptor fields alone, which hold in both modes.
fn check_descriptor<const MAX: usize>(
    d: &Container<'_>,
    view: &CsfView<'_, MAX>,
    warnings: Warnings,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    let rank = d.rank();
    // § Buffer Table: 2 * rank + 1, plus the scheme's parameter buffers.
    let own = csf::buffer_count(rank);
    let params = d.quantization().map_or(0, |q| 1 + usize::from(q.zero_point_type.is_some()));
    let count = d.buffer_count();
    if count != own + params {
        sink.violation(Violation::new(Rule::BufferCount, count as u64, (own + params) as u64))?;
    }
    if let Some(q) = d.quantization() {
        check_quantization(&QuantFields::from_container(d, view, &q), sink)?;
    }
    // § Buffer Size: byte_offset is 0.
    if d.byte_offset() != 0 {
        sink.violation(Violation::new(Rule::ByteOffset, d.byte_offset(), 0))?;
    }
    // § Sharding.
    if d.flags().contains(Flags::IS_SHARD) {
        sink.violation(Violation::new(Rule::ShardDescriptor, 1, 0))?;
    }
    // § Quantization Compatibility: parameter buffers on the values buffer's device.
    if let Some(values) = d.buffer_entry(csf::VALUES_BUFFER) {
        for (index, entry) in d.buffer_entries().enumerate().skip(own) {
            if entry.device_tag != values.device_tag {
                sink.violation(
                    Violation::new(
                        Rule::QuantizationDevice,
                        u64::from(entry.device_tag.0),
                        u64::from(values.device_tag.0),
                    )
                    .in_buffer(index),
                )?;
            }
        }
    }
    // § Interaction with Statistics Section.
    if let Some(stats) = d.statistics() {
        if stats.nnz != d.nnz() {
            sink.violation(Violation::new(Rule::StatisticsNnz, stats.nnz, d.nnz()))?;
        }
        let expected = match warnings {
            Warnings::Report => expected_sparsity_ratio(view.shape(), d.nnz()),
            Warnings::Drop => None,
        };
        if let Some(expected) = expected {
            // Written so that NaN (and an infinite ratio) fails the
            // comparison and warns. Not `f64::abs`: it is in `core` only
            // from Rust 1.85, and this crate is no_std with MSRV 1.81.
            let difference = stats.sparsity_ratio - expected;
            let close = (-SPARSITY_RATIO_TOLERANCE..=SPARSITY_RATIO_TOLERANCE).contains(&difference);
            if !close {
                sink.warning(Warning::SparsityRatio { found: stats.sparsity_ratio, expected });
            }
        }
    }
    Ok(())
}

/// How far a recorded `sparsity_ratio` may be from the expected one before
/// it is reported (`docs/format.md` § 5.6): an absolute 10^-9, far above the
/// rounding error of any binary64 computation of the ratio and far below a
/// difference in sparsity anyone would care about.
const SPARSITY_RATIO_TOLERANCE: f64 = 1e-9;

/// The ratio csf-layout § Interaction with Statistics Section asks for,
/// `1 - nnz / total_elements`, computed exactly as `docs/format.md` § 5.6
/// prescribes so that every reader warns alike: `None` when an extent is 0
/// (no elements: the ratio is undefined, and an overflowed product times 0
/// would be NaN), otherwise in binary64, the product of the extents in
/// shape order from 1.0. The product never fails: past `f64::MAX` it is
/// `+inf` and the ratio 1.0, which is also the correctly rounded value, since
/// `nnz / total < 2^64 / 2^1024`. (A `u64` product overflows at three extents
/// of 2^32, a `u128` one at rank 64.)
fn expected_sparsity_ratio(shape: &[u64], nnz: u64) -> Option<f64> {
    if shape.contains(&0) {
        return None;
    }
    let total = shape.iter().fold(1.0_f64, |t, &extent| t * extent as f64);
    Some(1.0 - nnz as f64 / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each view error is its own rule. `NotCsf` used to fall into a
    /// catch-all arm and come out as `missing-buffer`, a fault the buffer
    /// table did not have. (No decoded container has another layout, so
    /// only this mapping can show it.)
    #[test]
    fn a_layout_other_than_csf_is_its_own_rule() {
        let v = structural(ViewError::NotCsf(LayoutTag::COO));
        assert_eq!(v.rule.id(), "layout-not-csf");
        assert_eq!((v.found, v.expected), (0x02, 0x09));
        assert!(v.rule.is_structural());
        let text = v.to_string();
        assert!(text.starts_with("the layout is COO (0x02), not CSF (0x09)"), "{text}");
    }

    #[test]
    fn every_view_error_keeps_its_cause() {
        let cases = [
            (ViewError::RankTooSmall { rank: 2 }, Rule::RankBelow3),
            (ViewError::RankTooLarge { rank: 65, capacity: 64 }, Rule::RankAbove64),
            (ViewError::RankTooLarge { rank: 9, capacity: 8 }, Rule::ViewRefused),
            (ViewError::ModeOrderLength { len: 2, rank: 3 }, Rule::ModeOrderLength),
            (ViewError::MissingBuffer { index: 5, count: 5, needed: 7 }, Rule::MissingBuffer),
            (ViewError::NotU64Array { index: 3, len: 9 }, Rule::BufferNotU64),
            (ViewError::NotCsf(LayoutTag(0x42)), Rule::LayoutNotCsf),
        ];
        for (e, rule) in cases {
            assert_eq!(structural(e).rule, rule, "{e}");
        }
    }
}
