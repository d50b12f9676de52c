//! Key-range partitions of spilled records: cut keys from a sample's
//! quantiles, and the partition of a record ([`crate::ranges`] on records).

use super::spill::RecordShape;
use crate::ranges::{cut, range_of, QUANTILE_SAMPLE};

/// The partition of a record: the number of bounds at or below its key.
pub(super) fn partition_of(bounds: &[Vec<u64>], shape: RecordShape, order: &[u32], record: &[u8]) -> usize {
    range_of(bounds, order.iter().map(|&d| shape.coord(record, d as usize)))
}

/// Up to `parts - 1` strictly increasing keys that cut `records` (by their
/// storage-order keys) into `parts` near-equal ranges.
pub(super) fn quantiles(shape: RecordShape, order: &[u32], records: &[u8], parts: usize) -> Vec<Vec<u64>> {
    // A systematic sample is plenty for at most MAX_PARTITIONS cuts, and keeps
    // the keys' memory small beside the records'.
    let count = records.len() / shape.bytes();
    let stride = count.div_ceil(QUANTILE_SAMPLE).max(1);
    let keys = records
        .chunks_exact(shape.bytes())
        .step_by(stride)
        .map(|r| order.iter().map(|&d| shape.coord(r, d as usize)).collect())
        .collect();
    cut(keys, parts)
}
