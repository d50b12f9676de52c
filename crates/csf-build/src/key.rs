//! Packing a storage-order coordinate tuple into one integer key.
//!
//! Level `L`'s coordinate takes `bits_L = bit_length(shape[mode_order[L]] - 1)`
//! bits, level 0 in the most significant position, so that integer order is
//! the lexicographic order of storage tuples, the order CSF stores leaves in.
//!
//! A key holds nothing but the coordinates: duplicates keep their input order
//! because the sort is stable and moves each entry's value along with its key
//! (`sort.rs`), not because of an input position in the low bits. That keeps
//! keys in `u64` whenever the coordinates fit 64 bits (an input position would
//! add `log2(nnz)` bits: 24 at 10M entries, which pushed shapes such as
//! 5000 x 50000 x 500000 onto `u128`).

use hurray_format::limits::MAX_RANK;

/// An unsigned integer key: `u64` when the tuple fits in 64 bits (most real
/// shapes), `u128` otherwise.
pub(crate) trait Key: Copy + Ord + Send + Sync + Default + core::fmt::Debug + 'static {
    /// `self << shift | v` (0 for a shift of the whole width).
    fn shl_or(self, shift: u32, v: u64) -> Self;
    /// `self` with its low `bits` bits (at most 64) replaced by `low`, which
    /// must fit them.
    fn with_low(self, bits: u32, low: u64) -> Self;
    /// The low 64 bits of `self >> shift`.
    fn field(self, shift: u32) -> u64;
    /// `self ^ other`'s highest set bit, or `None` when equal.
    fn highest_diff(self, other: Self) -> Option<u32>;
    /// `v` as a key.
    fn from_u64(v: u64) -> Self;
    /// Keys that each hold a `u64` (see `from_u64`) as a `Vec<u64>`: the
    /// same allocation for `u64` keys, a copy for wider ones.
    fn into_u64s(keys: Vec<Self>) -> Vec<u64>;
}

macro_rules! key {
    ($t:ty, $into:expr) => {
        impl Key for $t {
            #[inline]
            fn shl_or(self, shift: u32, v: u64) -> Self {
                self.checked_shl(shift).unwrap_or(0) | v as $t
            }
            #[inline]
            fn with_low(self, bits: u32, low: u64) -> Self {
                self.checked_shr(bits).unwrap_or(0).checked_shl(bits).unwrap_or(0) | low as $t
            }
            #[inline]
            fn field(self, shift: u32) -> u64 {
                self.checked_shr(shift).unwrap_or(0) as u64
            }
            #[inline]
            fn highest_diff(self, other: Self) -> Option<u32> {
                let x = self ^ other;
                (x != 0).then(|| <$t>::BITS - 1 - x.leading_zeros())
            }
            #[inline]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            fn into_u64s(keys: Vec<Self>) -> Vec<u64> {
                $into(keys)
            }
        }
    };
}
key!(u64, |keys| keys);
key!(u128, |keys: Vec<u128>| keys.into_iter().map(|k| k as u64).collect());

/// Bits needed to hold every value below `extent`.
pub(crate) fn bit_length_below(extent: u64) -> u32 {
    64 - extent.saturating_sub(1).leading_zeros()
}

/// Where each level's field sits in a key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub(crate) rank: usize,
    /// Coordinate bits in all.
    pub(crate) coord_bits: u32,
    /// Shift of level `L`'s field.
    pub(crate) shift: [u32; MAX_RANK],
    /// Mask of level `L`'s field after shifting.
    pub(crate) mask: [u64; MAX_RANK],
    /// Bits of level `L`'s field.
    pub(crate) bits: [u32; MAX_RANK],
    /// For a differing bit position `b`, the level it belongs to.
    pub(crate) level_of_bit: [u8; 128],
}

impl Layout {
    /// The layout for extents `extents[L]` (in storage order).
    pub(crate) fn new(extents: &[u64]) -> Self {
        let rank = extents.len();
        let mut layout = Self {
            rank,
            coord_bits: 0,
            shift: [0; MAX_RANK],
            mask: [0; MAX_RANK],
            bits: [0; MAX_RANK],
            level_of_bit: [0; 128],
        };
        let mut shift = 0;
        for level in (0..rank).rev() {
            let bits = bit_length_below(extents[level]);
            layout.shift[level] = shift;
            layout.bits[level] = bits;
            layout.mask[level] = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            for b in shift..(shift + bits).min(128) {
                layout.level_of_bit[b as usize] = level as u8;
            }
            shift += bits;
            layout.coord_bits += bits;
        }
        layout
    }

    /// Total key bits.
    pub(crate) fn total_bits(&self) -> u32 {
        self.coord_bits
    }

    /// Level `level`'s coordinate in `key`.
    #[inline]
    pub(crate) fn coord<K: Key>(&self, key: K, level: usize) -> u64 {
        key.field(self.shift[level]) & self.mask[level]
    }

    /// The first level where two keys' tuples differ, or `None` when the
    /// tuples are equal (a duplicate).
    #[inline]
    pub(crate) fn split_level<K: Key>(&self, a: K, b: K) -> Option<usize> {
        let high = a.highest_diff(b)?;
        Some(self.level_of_bit[high as usize] as usize)
    }
}
