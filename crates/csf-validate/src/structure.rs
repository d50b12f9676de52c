//! The descriptor-level rules: rank, mode order, buffer table, sizes, byte
//! offset, sharding, quantization devices, statistics.

use hurray_format::limits::{MAX_QUANTIZATION_BUFFERS, MAX_RANK};
use hurray_format::{csf, Container, Descriptor};

use csf_core::{CsfView, ViewError};

use crate::invariants::{check_invariants, check_sizes};
use crate::rule::{Rule, Violation, Warning};
use crate::sink::{Sink, Stop};
use crate::Mode;

/// Checks a container in `mode`. Returns the view when the structural rules
/// hold (so that a view can exist at all), whatever else was reported.
pub(crate) fn check_container<'a>(
    container: &Container<'a>,
    mode: Mode,
    sink: &mut dyn Sink,
) -> Result<Option<CsfView<'a>>, Stop> {
    let d = container.descriptor();
    let view = match CsfView::from_container(container) {
        Ok(view) => view,
        Err(e) => {
            sink.violation(structural(e, d))?;
            return Ok(None);
        }
    };
    if mode == Mode::Strict {
        check_mode_order(&d.mode_order, sink)?;
    }
    check_descriptor(d, sink)?;
    check_sizes(&view, sink)?;
    if mode == Mode::Strict {
        check_invariants(&view, sink)?;
    }
    Ok(Some(view))
}

/// The structural rule a [`ViewError`] breaks.
pub(crate) fn structural(e: ViewError, d: &Descriptor) -> Violation {
    let rank = d.rank() as u64;
    match e {
        ViewError::RankTooSmall { rank } => Violation::new(Rule::RankBelow3, rank as u64, 3),
        ViewError::RankTooLarge { rank } => Violation::new(Rule::RankAbove64, rank as u64, MAX_RANK as u64),
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
        // A layout other than CSF cannot come out of the decoder; report it as
        // the closest structural rule rather than panic.
        _ => Violation::new(
            Rule::MissingBuffer,
            d.buffers.len() as u64,
            csf::buffer_count(rank as usize) as u64,
        ),
    }
}

/// § Mode Ordering: `mode_order` is a permutation of `0..rank`. Each entry
/// out of range or seen before is one violation, at its position.
pub(crate) fn check_mode_order(mode_order: &[u32], sink: &mut dyn Sink) -> Result<(), Stop> {
    let rank = mode_order.len();
    let mut seen = 0u128; // rank <= 64
    for (i, &dim) in mode_order.iter().enumerate() {
        if dim as usize >= rank || seen & (1u128 << dim) != 0 {
            let v = Violation::new(Rule::ModeOrderNotPermutation, u64::from(dim), rank as u64);
            sink.violation(v.at_index(i as u64))?;
        } else {
            seen |= 1u128 << dim;
        }
    }
    Ok(())
}

/// Rules on descriptor fields alone, which hold in both modes.
fn check_descriptor(d: &Descriptor, sink: &mut dyn Sink) -> Result<(), Stop> {
    let rank = d.rank();
    // § Buffer Table: 2 * rank + 1, plus quantization buffers only with the section.
    let own = csf::buffer_count(rank);
    let count = d.buffers.len();
    let count_ok = match d.quantization {
        None => count == own,
        Some(_) => count > own && count <= own + MAX_QUANTIZATION_BUFFERS,
    };
    if !count_ok {
        let expected = if d.quantization.is_some() { own + 1 } else { own };
        sink.violation(Violation::new(Rule::BufferCount, count as u64, expected as u64))?;
    }
    // § Buffer Size: byte_offset is 0.
    if d.byte_offset != 0 {
        sink.violation(Violation::new(Rule::ByteOffset, d.byte_offset, 0))?;
    }
    // § Sharding.
    if d.shard.is_some() {
        sink.violation(Violation::new(Rule::ShardDescriptor, 1, 0))?;
    }
    // § Quantization Compatibility: parameter buffers on the values buffer's device.
    if let Some(values) = d.buffers.get(csf::VALUES_BUFFER) {
        for (index, entry) in d.buffers.iter().enumerate().skip(own) {
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
    if let Some(stats) = d.statistics {
        if stats.nnz != d.nnz {
            sink.violation(Violation::new(Rule::StatisticsNnz, stats.nnz, d.nnz))?;
        }
        if let Some(total) = d.total_elements().filter(|&t| t > 0) {
            let expected = 1.0 - d.nnz as f64 / total as f64;
            let tolerance = 1e-9_f64.max(f64::EPSILON * 4.0);
            if !(stats.sparsity_ratio - expected).abs().le(&tolerance) {
                sink.warning(Warning::SparsityRatio { found: stats.sparsity_ratio, expected });
            }
        }
    }
    Ok(())
}
