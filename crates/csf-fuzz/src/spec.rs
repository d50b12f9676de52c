//! The CSF spec's MUSTs written out plainly, as a second opinion on strict
//! validation (target `validate_strict`). Slow and simple on purpose: it
//! copies every array into a `Vec<u64>` and checks one rule at a time.
//!
//! Quantization (docs/format.md § 5.7) is left to csf-validate: for a file
//! with a quantization section this only checks the rules that hold anyway.

use hurray_format::{csf, Container, ElementType, Packing};

/// A buffer as `u64`s, or `None` when it is missing or not whole words.
fn words(c: &Container<'_>, index: usize) -> Option<Vec<u64>> {
    let bytes = c.buffer(index)?;
    (bytes.len() % 8 == 0)
        .then(|| bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect())
}

/// The first rule (by name) that the file breaks, or `None`.
pub(crate) fn violation(c: &Container<'_>) -> Option<&'static str> {
    let d = c.descriptor();
    let rank = d.rank();
    // § Validity Constraints, § Mode Ordering.
    if !(3..=64).contains(&rank) {
        return Some("rank is 3..=64");
    }
    if d.mode_order.len() != rank {
        return Some("mode_order has rank entries");
    }
    let mut seen = vec![false; rank];
    for &dim in d.mode_order.iter() {
        match seen.get_mut(dim as usize) {
            Some(s) if !*s => *s = true,
            _ => return Some("mode_order is a permutation"),
        }
    }
    // § Buffer Table, § Buffer Size, § Sharding, § Quantization Compatibility, § Statistics.
    let own = csf::buffer_count(rank);
    let params = d.quantization.map_or(0, |q| 1 + usize::from(q.zero_point_type.is_some()));
    if d.buffers.len() != own + params {
        return Some("buffer_count is 2 * rank + 1 plus the parameter buffers");
    }
    if d.byte_offset != 0 {
        return Some("byte_offset is 0");
    }
    if d.shard.is_some() {
        return Some("no shard descriptor");
    }
    if d.buffers.iter().skip(own).any(|b| b.device_tag != d.buffers[0].device_tag) {
        return Some("parameter buffers on the values buffer's device");
    }
    if d.statistics.is_some_and(|s| s.nnz != d.nnz) {
        return Some("statistics nnz is nnz");
    }
    // § Storage Invariants, level by level; n_{-1} = 1.
    let mut parents = 1usize;
    for level in 0..rank {
        let (Some(pos), Some(crd)) = (words(c, csf::pos_buffer(level)), words(c, csf::crd_buffer(level)))
        else {
            return Some("pos and crd are whole u64 arrays");
        };
        if pos.len() != parents + 1 {
            return Some("pos_L has n_(L-1) + 1 entries");
        }
        if pos[0] != 0 {
            return Some("1. pos_L[0] = 0");
        }
        if pos.windows(2).any(|w| w[0] > w[1]) {
            return Some("2. pos_L is non-decreasing");
        }
        if pos[parents] != crd.len() as u64 {
            return Some("3. pos_L[n_(L-1)] = n_L");
        }
        for w in pos.windows(2) {
            if crd[w[0] as usize..w[1] as usize].windows(2).any(|s| s[0] >= s[1]) {
                return Some("4. siblings strictly increasing");
            }
        }
        let extent = d.shape[d.mode_order[level] as usize];
        if crd.iter().any(|&x| x >= extent) {
            return Some("5. crd_L < shape[mode_order[L]]");
        }
        parents = crd.len();
    }
    if parents as u64 != d.nnz {
        return Some("3. n_(rank-1) = nnz");
    }
    // The empty form: nnz = 0 means no level stores a node.
    if d.nnz == 0
        && (0..rank).any(|level| words(c, csf::crd_buffer(level)).is_some_and(|crd| !crd.is_empty()))
    {
        return Some("empty tensor: every crd_L is empty");
    }
    values_violation(d.element_type, d.nnz, c.buffer(csf::VALUES_BUFFER).unwrap_or_default())
}

/// § Buffer Size for values, and docs/format.md § 2.1 on their bytes.
fn values_violation(ty: ElementType, nnz: u64, bytes: &[u8]) -> Option<&'static str> {
    if ty.values_len(nnz) != Some(bytes.len() as u64) {
        return Some("values holds nnz elements");
    }
    match (ty, ty.packing()) {
        (ElementType::Bool, _) if bytes.iter().any(|&b| b > 1) => Some("bool bytes are 0 or 1"),
        (ElementType::F6E2M3 | ElementType::F6E3M2, _) if bytes.iter().any(|&b| b & 0xc0 != 0) => {
            Some("FP6 high bits are 0")
        }
        (_, Packing::SubByte { bits, per_byte }) => {
            let used = (nnz % u64::from(per_byte)) as u32 * u32::from(bits);
            let last = bytes.last().copied().unwrap_or(0);
            (used > 0 && u32::from(last) >> used != 0).then_some("unused 4-bit slot is 0")
        }
        _ => None,
    }
}
