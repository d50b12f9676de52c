//! Every cap the decoder enforces, in one place.
//!
//! Each limit is checked *before* any work proportional to the value it bounds,
//! so a hostile length field can never drive a loop or an allocation.

/// The largest rank a descriptor may declare (data model: rank is capped at 64).
pub const MAX_RANK: usize = 64;

/// The smallest rank CSF stores (csf-layout § Description): rank-1 and rank-2
/// tensors belong in COO, CSR or CSC.
pub const MIN_CSF_RANK: usize = 3;

/// A rank that CSF cannot store: the one check and the one wording that every
/// crate and front end uses (each wraps it in its own error type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankError {
    /// Below [`MIN_CSF_RANK`].
    TooSmall(usize),
    /// Above [`MAX_RANK`].
    TooLarge(usize),
}

impl RankError {
    /// Whether `rank` is one CSF stores (`3..=64`).
    pub fn check(rank: usize) -> Result<(), RankError> {
        if rank < MIN_CSF_RANK {
            Err(RankError::TooSmall(rank))
        } else if rank > MAX_RANK {
            Err(RankError::TooLarge(rank))
        } else {
            Ok(())
        }
    }
}

impl core::fmt::Display for RankError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            RankError::TooSmall(rank) => write!(
                f,
                "rank {rank} is below {MIN_CSF_RANK}: CSF is for rank >= {MIN_CSF_RANK}; store rank-1 and rank-2 \
                 tensors as COO, CSR or CSC"
            ),
            RankError::TooLarge(rank) => write!(f, "rank {rank} exceeds the cap of {MAX_RANK}"),
        }
    }
}

impl core::error::Error for RankError {}

/// The entries of a mode order that keep it from being a permutation of
/// `0..order.len()`, by position, in order: each entry out of range and each
/// repeat of an earlier one. None exactly when `order` is a permutation. The
/// one permutation check of the workspace (the builder, the validator and
/// the CLI call it). An order longer than [`MAX_RANK`] is no mode order a
/// descriptor can hold: its entries of `MAX_RANK` or more count as out of
/// range, so that the check needs no memory beyond a 64-bit set.
///
/// ```
/// use hurray_format::limits::permutation_faults;
///
/// assert_eq!(permutation_faults(&[2, 0, 1]).count(), 0);
/// // 3 is out of range for rank 3; the second 0 repeats the first.
/// assert_eq!(permutation_faults(&[0, 3, 0]).collect::<Vec<_>>(), [1, 2]);
/// ```
pub fn permutation_faults(order: &[u32]) -> PermutationFaults<'_> {
    PermutationFaults { order, next: 0, seen: 0 }
}

/// The iterator of [`permutation_faults`].
#[derive(Clone, Debug)]
pub struct PermutationFaults<'a> {
    order: &'a [u32],
    next: usize,
    /// Bit `d` set once dimension `d` has been seen (`d < MAX_RANK`).
    seen: u64,
}

impl Iterator for PermutationFaults<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let range = self.order.len().min(MAX_RANK);
        while let Some(&dim) = self.order.get(self.next) {
            let at = self.next;
            self.next += 1;
            let dim = dim as usize;
            if dim >= range || self.seen & (1 << dim) != 0 {
                return Some(at);
            }
            self.seen |= 1 << dim;
        }
        None
    }
}

/// The most quantization-parameter buffers a descriptor may carry after the
/// layout's own buffers (scales, zero points, block absmax, ... with room to spare).
pub const MAX_QUANTIZATION_BUFFERS: usize = 8;

/// The most buffers a descriptor may list: a rank-64 CSF tensor's `2 * 64 + 1`
/// plus [`MAX_QUANTIZATION_BUFFERS`].
pub const MAX_BUFFERS: usize = 2 * MAX_RANK + 1 + MAX_QUANTIZATION_BUFFERS;

/// The longest encoded descriptor, in bytes. The largest legal descriptor
/// (rank 64, [`MAX_BUFFERS`] buffers with 10-byte varints, a shard section)
/// needs under 5 KiB.
pub const MAX_DESCRIPTOR_LEN: usize = 8 * 1024;

/// Every buffer starts on a multiple of this many bytes from the start of the
/// file, so that `u64` arrays (and SIMD loads of values) can be read in place.
pub const BUFFER_ALIGNMENT: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_faults_name_each_entry_out_of_range_or_repeated() {
        assert_eq!(permutation_faults(&[]).count(), 0);
        assert_eq!(permutation_faults(&[0, 1, 2, 3]).count(), 0);
        let faults = |order: &[u32]| permutation_faults(order).collect::<Vec<_>>();
        assert_eq!(faults(&[0, 1, 1]), [2]);
        assert_eq!(faults(&[3, 1, 0]), [0]);
        assert_eq!(faults(&[u32::MAX, 7, 0, 0]), [0, 1, 3]);
        // The identity of rank 64 is a permutation; of rank 65 its last entry is out of range.
        let identity: Vec<u32> = (0..65).collect();
        assert_eq!(faults(&identity[..64]), Vec::<usize>::new());
        assert_eq!(faults(&identity), [64]);
    }

    #[test]
    fn the_rank_check_bounds_csf_at_3_and_64_and_says_where_else_to_go() {
        assert_eq!(RankError::check(2), Err(RankError::TooSmall(2)));
        assert_eq!(RankError::check(3), Ok(()));
        assert_eq!(RankError::check(64), Ok(()));
        assert_eq!(RankError::check(65), Err(RankError::TooLarge(65)));
        let mut text = [0u8; 128];
        let mut w = Buffer { bytes: &mut text, len: 0 };
        core::fmt::write(&mut w, format_args!("{}", RankError::TooSmall(1))).unwrap();
        let shown = core::str::from_utf8(&w.bytes[..w.len]).unwrap();
        assert!(shown.starts_with("rank 1 is below 3") && shown.ends_with("COO, CSR or CSC"), "{shown}");
    }

    /// A `fmt::Write` into a fixed array (the crate builds without `alloc`).
    struct Buffer<'a> {
        bytes: &'a mut [u8],
        len: usize,
    }

    impl core::fmt::Write for Buffer<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let end = self.len + s.len();
            self.bytes.get_mut(self.len..end).ok_or(core::fmt::Error)?.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
}
