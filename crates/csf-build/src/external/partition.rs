//! Key-range partitions: cut keys from a sample's quantiles, and the
//! partition of a spilled record.

use super::spill::RecordShape;

/// Keys sorted to choose the partitions' bounds.
const QUANTILE_SAMPLE: usize = 1 << 16;

/// The partition of a record: the number of bounds at or below its key
/// (compared in place, without making the key: this runs once per entry).
pub(super) fn partition_of(bounds: &[Vec<u64>], shape: RecordShape, order: &[u32], record: &[u8]) -> usize {
    bounds.partition_point(|bound| {
        let key = order.iter().map(|&d| shape.coord(record, d as usize));
        bound.iter().copied().cmp(key) != std::cmp::Ordering::Greater
    })
}

/// A record's coordinates in storage order.
fn storage_key(shape: RecordShape, order: &[u32], record: &[u8]) -> Vec<u64> {
    order.iter().map(|&d| shape.coord(record, d as usize)).collect()
}

/// Up to `parts - 1` strictly increasing keys that cut `records` (by their
/// storage-order keys) into `parts` near-equal ranges. Equal keys never
/// straddle a cut: a cut is a key, and a range holds the keys below it.
pub(super) fn quantiles(shape: RecordShape, order: &[u32], records: &[u8], parts: usize) -> Vec<Vec<u64>> {
    // A systematic sample is plenty for at most MAX_PARTITIONS cuts, and keeps
    // the keys' memory small beside the records'.
    let count = records.len() / shape.bytes();
    let stride = count.div_ceil(QUANTILE_SAMPLE).max(1);
    let mut keys: Vec<Vec<u64>> =
        records.chunks_exact(shape.bytes()).step_by(stride).map(|r| storage_key(shape, order, r)).collect();
    keys.sort_unstable();
    let mut bounds: Vec<Vec<u64>> = Vec::new();
    for p in 1..parts {
        let Some(key) = keys.get(p * keys.len() / parts) else { continue };
        // A cut at the smallest key would leave the first range empty.
        let above_last = bounds.last().map_or(Some(key) != keys.first(), |b| key > b);
        if above_last {
            bounds.push(key.clone());
        }
    }
    bounds
}
