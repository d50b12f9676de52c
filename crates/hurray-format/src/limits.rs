//! Every cap the decoder enforces, in one place.
//!
//! Each limit is checked *before* any work proportional to the value it bounds,
//! so a hostile length field can never drive a loop or an allocation.

/// The largest rank a descriptor may declare (data model: rank is capped at 64).
pub const MAX_RANK: usize = 64;

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
